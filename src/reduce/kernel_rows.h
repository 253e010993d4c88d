// SPDX-License-Identifier: Apache-2.0
// The one table of (dtype, op) kernels, built the same way by every ISA's kernels_<isa>.cc from
// the templates in kernels.h. Which pairs exist is reductionDefined() (smddp/types.h); each row
// is filled with `if constexpr` on it, so a pair that is not defined is never instantiated (a
// complex MIN would not compile) and its entry stays null.
#pragma once

#include <cstdint>

#include "reduce/kernels.h"

namespace smddp::reduce {
namespace {

// Storage types that compute in float32 (kernels.h's block path).
template <class T>
constexpr bool kWidened = false;
template <>
constexpr bool kWidened<Half> = true;
template <>
constexpr bool kWidened<BFloat16> = true;
template <class Fmt>
constexpr bool kWidened<Float8<Fmt>> = true;

template <class T>
struct IsComplex : std::false_type {};
template <class R>
struct IsComplex<Complex<R>> : std::true_type {};

template <class T, DataType D, ReduceOp kOp>
constexpr void fillOp(KernelTable& t) {
  if constexpr (reductionDefined(D, kOp)) {
    using Op = typename OpFor<D, kOp>::type;
    if constexpr (IsComplex<T>::value && kOp == ReduceOp::kProd) {
      t.reduce[int(D)][int(kOp)] = &reduceComplexProd<decltype(T{}.re)>;
    } else if constexpr (kWidened<T>) {
      t.reduce[int(D)][int(kOp)] = &reduceWidened<T, Op>;
    } else {
      t.reduce[int(D)][int(kOp)] = &reduceNative<T, Op>;
    }
  }
}

template <class T, DataType D>
constexpr void fillRow(KernelTable& t) {
  fillOp<T, D, ReduceOp::kSum>(t);
  fillOp<T, D, ReduceOp::kProd>(t);
  fillOp<T, D, ReduceOp::kMin>(t);
  fillOp<T, D, ReduceOp::kMax>(t);
  fillOp<T, D, ReduceOp::kAvg>(t);
  fillOp<T, D, ReduceOp::kBand>(t);
  fillOp<T, D, ReduceOp::kBor>(t);
  fillOp<T, D, ReduceOp::kBxor>(t);
  if constexpr (reductionDefined(D, ReduceOp::kAvg)) {
    if constexpr (kWidened<T>) {
      t.average[int(D)] = &averageWidened<T>;
    } else if constexpr (IsComplex<T>::value) {
      t.average[int(D)] = &averageComplex<decltype(T{}.re)>;
    } else if constexpr (std::is_integral_v<T>) {
      t.average[int(D)] = &averageIntegral<T>;
    } else {
      t.average[int(D)] = &averageNative<T>;
    }
  }
}

// constexpr, so each ISA's table is constant data: merely naming it runs no ISA-specific code.
constexpr KernelTable makeTable(const char* name) {
  KernelTable t = {};
  t.name = name;
  fillRow<float, DataType::kFloat32>(t);
  fillRow<double, DataType::kFloat64>(t);
  fillRow<Half, DataType::kFloat16>(t);
  fillRow<BFloat16, DataType::kBFloat16>(t);
  fillRow<int8_t, DataType::kInt8>(t);
  fillRow<uint8_t, DataType::kUInt8>(t);
  fillRow<int32_t, DataType::kInt32>(t);
  fillRow<int64_t, DataType::kInt64>(t);
  fillRow<int16_t, DataType::kInt16>(t);
  fillRow<uint16_t, DataType::kUInt16>(t);
  fillRow<uint32_t, DataType::kUInt32>(t);
  fillRow<uint64_t, DataType::kUInt64>(t);
  fillRow<uint8_t, DataType::kBool>(t);
  fillRow<Float8<F8E4M3FN>, DataType::kFloat8E4M3FN>(t);
  fillRow<Float8<F8E4M3FNUZ>, DataType::kFloat8E4M3FNUZ>(t);
  fillRow<Float8<F8E5M2>, DataType::kFloat8E5M2>(t);
  fillRow<Float8<F8E5M2FNUZ>, DataType::kFloat8E5M2FNUZ>(t);
  fillRow<Float8<F8E8M0Format>, DataType::kFloat8E8M0FNU>(t);
  fillRow<Complex<float>, DataType::kComplex64>(t);
  fillRow<Complex<double>, DataType::kComplex128>(t);
  return t;
}

}  // namespace
}  // namespace smddp::reduce
