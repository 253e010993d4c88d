// SPDX-License-Identifier: Apache-2.0
// The element-wise reduce ops, shared by the CPU kernels (kernels.h, compiled once per ISA)
// and the CUDA kernels (cuda/ops_cuda.cuh): one set of expressions is what makes the GPU's results
// equal the CPU reducer's bit for bit.
// Invariants: integer SUM/PROD wrap through the unsigned type (no UB); MIN/MAX return NaN when
// either input is NaN (torch semantics); each op is one arithmetic operation (no FMA can form).
// They live in an anonymous namespace on purpose: every ISA's translation unit gets its own copy,
// so the linker can never hand an AVX-512 instantiation to the baseline path.
#pragma once

#include <type_traits>

#include "smddp/types.h"

#include "reduce/host_device.h"

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

// Bitwise ops: integer types only.
struct BandOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C(a & b);
  }
};

struct BorOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C(a | b);
  }
};

struct BxorOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C(a ^ b);
  }
};

// bool, stored as one byte: any non-zero byte is true, and every result is 0 or 1.
struct LogicalOrOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C((a | b) != 0);
  }
};

struct LogicalAndOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C((a != 0) & (b != 0));
  }
};

struct LogicalXorOp {
  template <class C>
  SMDDP_HD static C apply(C a, C b) {
    return C((a != 0) != (b != 0));
  }
};

// The element op that implements `op` on dtype D: bool maps the arithmetic ops onto logic.
template <DataType D, ReduceOp kOp>
struct OpFor;
#define SMDDP_OP_FOR(OP, NUMERIC, BOOLEAN)                                              \
  template <DataType D>                                                                 \
  struct OpFor<D, ReduceOp::OP> {                                                       \
    using type = std::conditional_t<D == DataType::kBool, BOOLEAN, NUMERIC>;            \
  };
SMDDP_OP_FOR(kSum, SumOp, LogicalOrOp)
SMDDP_OP_FOR(kProd, ProdOp, LogicalAndOp)
SMDDP_OP_FOR(kMin, MinOp, LogicalAndOp)
SMDDP_OP_FOR(kMax, MaxOp, LogicalOrOp)
SMDDP_OP_FOR(kAvg, SumOp, SumOp)  // AVG = SUM, then finishAverage()
SMDDP_OP_FOR(kBand, BandOp, LogicalAndOp)
SMDDP_OP_FOR(kBor, BorOp, LogicalOrOp)
SMDDP_OP_FOR(kBxor, BxorOp, LogicalXorOp)
#undef SMDDP_OP_FOR

}  // namespace
}  // namespace smddp::reduce
