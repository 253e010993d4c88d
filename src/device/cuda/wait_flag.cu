// SPDX-License-Identifier: Apache-2.0
// The waitValue fallback kernel (wait_flag.h). The flag is read through a volatile pointer into
// mapped pinned memory, so every read crosses to host memory and sees the host's stores.
#include "device/cuda/wait_flag.h"

namespace smddp::device {
namespace {

constexpr unsigned long long kLimitNs = 3600ull * 1000000000ull;

__device__ unsigned long long globalNs() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void waitFlagKernel(const volatile uint32_t* flag, uint32_t value) {
  const unsigned long long start = globalNs();
  while (static_cast<int32_t>(*flag - value) < 0) {
    __nanosleep(2000);
    if (globalNs() - start > kLimitNs) return;
  }
}

}  // namespace

cudaError_t loadWaitFlag() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, waitFlagKernel);
}

cudaError_t launchWaitFlag(const uint32_t* deviceFlag, uint32_t value, cudaStream_t stream) {
  waitFlagKernel<<<1, 1, 0, stream>>>(deviceFlag, value);
  return cudaGetLastError();
}

}  // namespace smddp::device
