// SPDX-License-Identifier: Apache-2.0
// The fallback of CudaDevice::waitValue where the driver has no stream memory operations: a
// one-thread kernel that holds its stream until a flag in mapped pinned memory reaches a value.
// Unlike a host function on the stream, it blocks no thread of the CUDA runtime (which may run
// the host functions of every stream one at a time), only its own stream.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace smddp::device {

// Enqueues the wait on `stream`: work behind it starts once (int32_t)(*flag - value) >= 0, or after
// an hour (then it gives up: no stream waits forever). `deviceFlag`: the flag's device address.
cudaError_t launchWaitFlag(const uint32_t* deviceFlag, uint32_t value, cudaStream_t stream);

// Loads the kernel into the current device's context (CUDA loads it lazily otherwise; see
// reduce::loadKernelsCuda for why that matters).
cudaError_t loadWaitFlag();

}  // namespace smddp::device
