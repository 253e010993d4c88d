// SPDX-License-Identifier: Apache-2.0
// The four element-wise reduce ops, shared by the CPU kernels (kernels.h, compiled once per ISA)
// and the CUDA kernels (cuda/ops_cuda.cuh): one set of expressions is what makes the GPU's results
// equal the CPU reducer's bit for bit.
// Invariants: integer SUM/PROD wrap through the unsigned type (no UB); MIN/MAX return NaN when
// either input is NaN (torch semantics); each op is one arithmetic operation (no FMA can form).
// They live in an anonymous namespace on purpose: every ISA's translation unit gets its own copy,
// so the linker can never hand an AVX-512 instantiation to the baseline path.
#pragma once

#include <type_traits>

#ifdef __CUDACC__
#define SMDDP_HD __host__ __device__
#else
#define SMDDP_HD
#endif

namespace smddp::reduce {
namespace {

struct SumOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      using U = std::make_unsigned_t<C>;
      return C(U(U(a) + U(b)));
    } else {
      return a + b;
    }
  }
};

struct ProdOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    if constexpr (std::is_integral_v<C>) {
      // Narrow types multiply as unsigned int, not int: uint16 * uint16 in int could overflow.
      using UC = std::make_unsigned_t<C>;
      using U = std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, UC>;
      return C(UC(U(UC(a)) * U(UC(b))));
    } else {
      return a * b;
    }
  }
};

struct MinOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    // a != a: a is NaN (never, for integers). A NaN b fails a < b, so b is picked.
    return (a < b || a != a) ? a : b;
  }
};

struct MaxOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return (a > b || a != a) ? a : b;
  }
};

}  // namespace
}  // namespace smddp::reduce
