// SPDX-License-Identifier: Apache-2.0
// Element-wise reduction kernels for host memory, vectorized with runtime ISA dispatch (baseline
// x86-64 / AVX2+F16C / AVX-512), never -march=native. float16, bfloat16 and float8 are widened to
// float32 for the arithmetic and rounded (to nearest even) once per call.
#pragma once

#include <cstddef>

#include "smddp/types.h"

namespace smddp::reduce {

// True when op is defined for dtype: reductionDefined() (smddp/types.h).
bool supported(DataType dtype, ReduceOp op);

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b (exactly, not partially).
// AVG reduces as SUM; finishAverage() divides at the end. Throws Error(kUnsupported) for pairs
// that supported() rejects.
void reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count);

// buf[i] = buf[i] / divisor, computed in float32 (float32 and the 16- and 8-bit floats), float64,
// 64-bit integers (truncated toward zero) or per part for complex. Every dtype that has AVG.
void finishAverage(DataType dtype, void* buf, size_t count, int divisor);

// The implementation picked at start-up: "avx512", "avx2" or "baseline".
const char* isaName();

// Testing and A/B measurement only: makes reduce()/finishAverage() use the named implementation
// ("baseline", "avx2", "avx512") from now on; nullptr or "" restores the automatic choice.
// Throws Error(kUnsupported) when this build did not compile it or this CPU cannot run it.
// Not meant to be flipped while other threads reduce (each call uses one table throughout).
void forceIsa(const char* name);

}  // namespace smddp::reduce
