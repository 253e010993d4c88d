// SPDX-License-Identifier: Apache-2.0
// The one table of (dtype, op) kernels, built the same way by every ISA's kernels_<isa>.cc from
// the templates in kernels.h. Which pairs exist is reductionDefined() (smddp/types.h); each row
// is filled with `if constexpr` on it, so a pair that is not defined is never instantiated (a
// complex MIN would not compile) and its entry stays null.
#pragma once

#include <cstdint>

#include "reduce/kernels.h"
#include "reduce/storage_types.h"

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
#define SMDDP_FILL_OP(OP) fillOp<T, D, ReduceOp::OP>(t);
  SMDDP_REDUCE_OPS(SMDDP_FILL_OP)
#undef SMDDP_FILL_OP
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
#define SMDDP_FILL_ROW(T, D) fillRow<T, DataType::D>(t);
  SMDDP_REDUCE_STORAGE_TYPES(SMDDP_FILL_ROW)
#undef SMDDP_FILL_ROW
  return t;
}

}  // namespace
}  // namespace smddp::reduce
