// SPDX-License-Identifier: Apache-2.0
// CUDA reduction kernels: the host API. Built only when nvcc is found (target smddp_reduce_cuda).
// No CUDA header here (streams are void*, i.e. a cudaStream_t; nullptr is the legacy default
// stream), so non-CUDA code can include it.
// Invariants: results equal the CPU reducer (reduce/reducer.h) bit for bit for every non-NaN
// result: fp16/bf16/fp8 widen to fp32, compute, and round once to nearest even; integer SUM/PROD
// wrap; bool ops are logical; complex products round each multiply and add on its own;
// floating MIN/MAX return NaN when either input is NaN (same select as the CPU). NaN results are
// NaN, but their sign and payload may differ from the CPU's (the GPU makes canonical NaNs).
// Every check below happens before any CUDA call, so bad arguments never touch the device.
#pragma once

#include <cstddef>

#include "smddp/types.h"

namespace smddp::reduce {

// True when this build instantiated a kernel for (dtype, op): every pair reductionDefined()
// names (smddp/types.h), the same pairs as the CPU reducer.
bool supportedCuda(DataType dtype, ReduceOp op);

// dst[i] = a[i] op b[i] for i < count, enqueued on `stream` of the current CUDA device; returns
// without waiting. Pointers must be device-accessible and element-aligned; dst may alias a or b
// exactly, never partially. AVG reduces as SUM (finishAverageCuda divides at the end). Any length
// and offset works; when all three pointers share one misalignment the body uses 16-byte vectors.
// Throws Error(kUnsupported) naming dtype and op for pairs supportedCuda() rejects, or when no
// CUDA device is usable; Error(kInvalidArgument) on null, misaligned or partially overlapping
// pointers; Error(kInternal) with the CUDA error string if the launch fails.
void reduceCuda(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count,
                void* stream);

// buf[i] = buf[i] / divisor on `stream`, computed in float32 (float16/bfloat16/float32) or
// float64 (integers in 64 bits, complex per part), exactly as reduce::finishAverage does on the
// host. Dtypes that have AVG only; divisor > 0.
void finishAverageCuda(DataType dtype, void* buf, size_t count, int divisor, void* stream);

// Loads every kernel above into the current device's context now. CUDA loads a kernel lazily, at
// its first launch, and that load may wait until every stream of the context is idle: a first
// launch issued while a stream waits on a flag that only a later host step raises never returns.
// Callers that gate streams on host flags load the kernels first. Throws Error(kUnsupported)
// without a usable device, Error(kInternal) with the CUDA error string otherwise.
void loadKernelsCuda();

// Device-to-device cudaMemcpyAsync throughput of `bytes` from src to dst on `stream`, timed with
// CUDA events over `iterations` copies after one warm-up copy. Returns bytes moved through memory
// per second in GB/s (1e9), counting read + write: 2 bytes per copied byte. Synchronizes `stream`.
double cudaDeviceCopyBandwidth(void* dst, const void* src, size_t bytes, int iterations,
                               void* stream);

}  // namespace smddp::reduce
