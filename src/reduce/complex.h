// SPDX-License-Identifier: Apache-2.0
// Complex storage and arithmetic for the reducers: real part then imaginary part, as torch and
// C++ lay them out. Shared by the CPU kernels and the CUDA kernels (SMDDP_HD).
// Invariants: the product is (ac - bd) + (ad + bc)i with every multiply and add rounded on its
// own (the CPU kernels build with -ffp-contract=off; on the GPU the _rn intrinsics never fuse), so
// every ISA and the GPU agree bit for bit; the average divides each part by the divisor.
#pragma once

#include "reduce/host_device.h"

namespace smddp::reduce {
namespace {

template <class R>
struct Complex {
  R re;
  R im;
};

template <class R>
SMDDP_HD inline R mulRn(R a, R b) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(R) == 4) return __fmul_rn(a, b);
  else return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

template <class R>
SMDDP_HD inline R addRn(R a, R b) {
#ifdef __CUDA_ARCH__
  if constexpr (sizeof(R) == 4) return __fadd_rn(a, b);
  else return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

template <class R>
SMDDP_HD inline Complex<R> operator+(Complex<R> x, Complex<R> y) {
  return Complex<R>{addRn(x.re, y.re), addRn(x.im, y.im)};
}

template <class R>
SMDDP_HD inline Complex<R> operator*(Complex<R> x, Complex<R> y) {
  return Complex<R>{addRn(mulRn(x.re, y.re), -mulRn(x.im, y.im)),
                    addRn(mulRn(x.re, y.im), mulRn(x.im, y.re))};
}

template <class R>
SMDDP_HD inline Complex<R> divideBy(Complex<R> x, R divisor) {
  return Complex<R>{x.re / divisor, x.im / divisor};
}

}  // namespace
}  // namespace smddp::reduce
