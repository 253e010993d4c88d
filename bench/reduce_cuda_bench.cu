// SPDX-License-Identifier: Apache-2.0
// reduce_cuda_bench: throughput of the CUDA SUM kernels (float16, bfloat16, float32) on two
// 256 MiB device buffers into a third, next to the device-to-device cudaMemcpy bandwidth measured
// in the same run. Both count bytes moved through memory: 3 per output byte for the reduction
// (read a, read b, write dst), 2 per copied byte for the memcpy; the target is >= 85% of it.
// The first and last 1 MiB of every result are checked against the CPU reducer (#wrong column).
// Usage: reduce_cuda_bench [MiB per buffer, default 256] [iterations, default 20]
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "reduce/cuda/reducer_cuda.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace {

using smddp::DataType;
using smddp::ReduceOp;

constexpr size_t kPatternBytes = size_t(1) << 20;  // data repeats with this period

void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  std::fprintf(stderr, "reduce_cuda_bench: %s: %s\n", what, cudaGetErrorString(err));
  std::exit(1);
}

// Random bits that are finite numbers in every 16/32-bit float format: small positive/negative
// values built from random mantissas with a fixed mid-range exponent.
std::vector<uint8_t> makePattern(DataType t, uint64_t seed) {
  std::vector<uint8_t> p(kPatternBytes);
  std::mt19937_64 rng(seed);
  size_t es = smddp::dataTypeSize(t);
  for (size_t off = 0; off < kPatternBytes; off += es) {
    uint32_t r = uint32_t(rng());
    if (t == DataType::kFloat32) {
      float f = float(int32_t(r % 2000001) - 1000000) / 4096.0f;
      std::memcpy(&p[off], &f, 4);
    } else {
      // sign | exponent near 1.0 | random mantissa, for either 16-bit layout.
      uint16_t h = t == DataType::kFloat16 ? uint16_t(0x3800 | (r & 0x83FF))
                                           : uint16_t(0x3F00 | (r & 0x807F));
      std::memcpy(&p[off], &h, 2);
    }
  }
  return p;
}

void fill(void* dev, size_t bytes, const std::vector<uint8_t>& pattern) {
  for (size_t off = 0; off < bytes; off += kPatternBytes) {
    size_t n = bytes - off < kPatternBytes ? bytes - off : kPatternBytes;
    check(cudaMemcpy(static_cast<uint8_t*>(dev) + off, pattern.data(), n, cudaMemcpyHostToDevice),
          "fill");
  }
}

// Elements of the first and last pattern-sized window of dst that differ from the CPU reducer.
size_t countWrong(DataType t, const void* dst, size_t bytes, const std::vector<uint8_t>& a,
                  const std::vector<uint8_t>& b) {
  size_t es = smddp::dataTypeSize(t), n = kPatternBytes / es, wrong = 0;
  std::vector<uint8_t> want(kPatternBytes), got(kPatternBytes);
  smddp::reduce::reduce(t, ReduceOp::kSum, want.data(), a.data(), b.data(), n);
  for (size_t off : {size_t(0), bytes - kPatternBytes}) {
    check(cudaMemcpy(got.data(), static_cast<const uint8_t*>(dst) + off, kPatternBytes,
                     cudaMemcpyDeviceToHost),
          "read back");
    for (size_t i = 0; i < n; ++i) wrong += std::memcmp(&got[i * es], &want[i * es], es) != 0;
  }
  return wrong;
}

double timeReduce(DataType t, void* d, const void* a, const void* b, size_t count, int iters,
                  cudaStream_t st) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  smddp::reduce::reduceCuda(t, ReduceOp::kSum, d, a, b, count, st);  // warm-up
  check(cudaEventRecord(start, st), "cudaEventRecord");
  for (int i = 0; i < iters; ++i) smddp::reduce::reduceCuda(t, ReduceOp::kSum, d, a, b, count, st);
  check(cudaEventRecord(stop, st), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / 1e3 / iters;
}

}  // namespace

int main(int argc, char** argv) {
  size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
  int iters = argc > 2 ? std::atoi(argv[2]) : 20;
  if (mib < 2 || iters < 1) {
    std::fprintf(stderr, "usage: reduce_cuda_bench [MiB per buffer >= 2] [iterations >= 1]\n");
    return 2;
  }
  const size_t bytes = mib << 20;
  cudaDeviceProp prop;
  check(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  cudaStream_t st;
  check(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
  void *a, *b, *d;
  check(cudaMalloc(&a, bytes), "cudaMalloc");
  check(cudaMalloc(&b, bytes), "cudaMalloc");
  check(cudaMalloc(&d, bytes), "cudaMalloc");

  double copy = smddp::reduce::cudaDeviceCopyBandwidth(d, a, bytes, iters, st);
  std::printf("# device %s (sm_%d%d, %d SMs), %zu MiB per buffer, %d iterations\n", prop.name,
              prop.major, prop.minor, prop.multiProcessorCount, mib, iters);
  std::printf("# cudaMemcpy D2D: %.1f GB/s (2 bytes moved per copied byte)\n", copy);
  std::printf("%-10s %5s %12s %12s %10s %8s\n", "dtype", "op", "time(us)", "GB/s", "%memcpy",
              "#wrong");
  int failures = 0;
  for (DataType t : {DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32}) {
    std::vector<uint8_t> pa = makePattern(t, 1), pb = makePattern(t, 2);
    fill(a, bytes, pa);
    fill(b, bytes, pb);
    check(cudaMemset(d, 0xA5, bytes), "poison");
    size_t count = bytes / smddp::dataTypeSize(t);
    double sec = timeReduce(t, d, a, b, count, iters, st);
    double gbps = 3.0 * double(bytes) / sec / 1e9;
    size_t wrong = countWrong(t, d, bytes, pa, pb);
    failures += wrong != 0;
    std::printf("%-10s %5s %12.1f %12.1f %9.1f%% %8zu\n", smddp::toString(t), "sum", sec * 1e6,
                gbps, 100.0 * gbps / copy, wrong);
  }
  cudaFree(a);
  cudaFree(b);
  cudaFree(d);
  cudaStreamDestroy(st);
  return failures == 0 ? 0 : 1;
}
