// SPDX-License-Identifier: Apache-2.0
// cudaDeviceCopyBandwidth: the device's measured copy bandwidth, the yardstick the reduction
// benchmark quotes its throughput against (a reduction cannot beat memory bandwidth).
// Invariant: events and the stream's pending work are always released/synchronized, also on error.
#include <cuda_runtime.h>

#include <string>

#include "reduce/cuda/reducer_cuda.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

void check(cudaError_t err, const char* what, size_t bytes) {
  if (err == cudaSuccess) return;
  throw Error(ErrorCode::kInternal, std::string("cudaDeviceCopyBandwidth: ") + what + " on " +
                                        std::to_string(bytes) +
                                        " bytes failed: " + cudaGetErrorString(err));
}

// Two CUDA events, destroyed on every path.
struct EventPair {
  cudaEvent_t start = nullptr, stop = nullptr;
  explicit EventPair(size_t bytes) {
    check(cudaEventCreate(&start), "cudaEventCreate", bytes);
    cudaError_t err = cudaEventCreate(&stop);
    if (err != cudaSuccess) cudaEventDestroy(start);
    check(err, "cudaEventCreate", bytes);
  }
  ~EventPair() {
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
  }
  EventPair(const EventPair&) = delete;
  EventPair& operator=(const EventPair&) = delete;
};

}  // namespace

double cudaDeviceCopyBandwidth(void* dst, const void* src, size_t bytes, int iterations,
                               void* stream) {
  if (bytes == 0 || iterations < 1 || dst == nullptr || src == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "cudaDeviceCopyBandwidth: needs non-null buffers, bytes > 0 and iterations >= 1 "
                "(got " +
                    std::to_string(bytes) + " bytes, " + std::to_string(iterations) +
                    " iterations)");
  }
  auto st = static_cast<cudaStream_t>(stream);
  EventPair ev(bytes);
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st), "warm-up copy", bytes);
  check(cudaEventRecord(ev.start, st), "cudaEventRecord", bytes);
  for (int i = 0; i < iterations; ++i) {
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, st), "copy", bytes);
  }
  check(cudaEventRecord(ev.stop, st), "cudaEventRecord", bytes);
  check(cudaEventSynchronize(ev.stop), "cudaEventSynchronize", bytes);
  float ms = 0;
  check(cudaEventElapsedTime(&ms, ev.start, ev.stop), "cudaEventElapsedTime", bytes);
  double seconds = double(ms) / 1e3;
  return seconds > 0 ? 2.0 * double(bytes) * iterations / seconds / 1e9 : 0.0;
}

}  // namespace smddp::reduce
