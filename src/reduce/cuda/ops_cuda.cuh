// SPDX-License-Identifier: Apache-2.0
// Device-side element operations for the CUDA reduction kernels: the CPU reducer's reduce ops
// (shared, reduce/element_ops.h; complex.h and float8.h for those types) and the storage <-> compute conversions, which mirror
// src/reduce/convert.h, so the GPU results equal the CPU reducer's.
// Invariants: float16/bfloat16 compute in float32 and round to nearest even (the cvt.rn
// conversions; exact for widening); integer SUM/PROD wrap through the unsigned type (no UB);
// MIN/MAX use the CPU's select, so a NaN in either input gives NaN and (+0, -0) picks the same
// operand as the CPU. No fused multiply-add can form: each op is one arithmetic operation.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

// SMDDP_HD (reduce/element_ops.h) is host and device here: the host copies let a CPU test
// (tests/unit/reduce_cuda_ops_test.cu) check these very expressions against the CPU reducer.
#include "reduce/complex.h"
#include "reduce/element_ops.h"
#include "reduce/float8.h"

namespace smddp::reduce::cudak {

// The ops themselves are the CPU reducer's (reduce/element_ops.h).
using ::smddp::reduce::MaxOp;
using ::smddp::reduce::MinOp;
using ::smddp::reduce::ProdOp;
using ::smddp::reduce::SumOp;
using ::smddp::reduce::Complex;
using ::smddp::reduce::Float8;

// 16-bit float storage: raw bits, so the kernels never depend on __half's operators.
struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

// Compute<T>: the arithmetic type for storage type T and the two conversions.
template <class T>
struct Compute {
  using type = T;
  SMDDP_HD static T widen(T v) { return v; }
  SMDDP_HD static T narrow(T v) { return v; }
};

template <>
struct Compute<Half> {
  using type = float;
  SMDDP_HD static float widen(Half v) { return __half2float(__ushort_as_half(v.bits)); }
  SMDDP_HD static Half narrow(float f) { return Half{__half_as_ushort(__float2half_rn(f))}; }
};

template <>
struct Compute<BFloat16> {
  using type = float;
  SMDDP_HD static float widen(BFloat16 v) { return __bfloat162float(__ushort_as_bfloat16(v.bits)); }
  SMDDP_HD static BFloat16 narrow(float f) {
    return BFloat16{__bfloat16_as_ushort(__float2bfloat16_rn(f))};
  }
};

// float8: the shared conversions of reduce/float8.h.
template <class Fmt>
struct Compute<Float8<Fmt>> {
  using type = float;
  SMDDP_HD static float widen(Float8<Fmt> v) { return Fmt::widen(v.bits); }
  SMDDP_HD static Float8<Fmt> narrow(float f) { return Float8<Fmt>{Fmt::narrow(f)}; }
};

template <class T, class Op>
SMDDP_HD inline T applyElement(T x, T y) {
  using C = Compute<T>;
  return C::narrow(Op::apply(C::widen(x), C::widen(y)));
}

// Division for finishAverage, as the CPU does: by a float32 divisor for the 32-bit-and-narrower
// floats, float64 for float64, each part for complex, and in 64-bit integers (truncated toward
// zero) for integers. '/' is IEEE division (this code is never built with fast math).
template <class T>
SMDDP_HD inline T divideElement(T x, int divisor) {
  if constexpr (std::is_integral_v<T>) {
    using W = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
    return T(W(x) / W(divisor));
  } else {
    using C = Compute<T>;
    using D = std::conditional_t<std::is_same_v<T, double>, double, float>;
    return C::narrow(typename C::type(D(C::widen(x)) / D(divisor)));
  }
}

template <class R>
SMDDP_HD inline Complex<R> divideElement(Complex<R> x, int divisor) {
  return ::smddp::reduce::divideBy(x, R(divisor));
}

}  // namespace smddp::reduce::cudak
