// SPDX-License-Identifier: Apache-2.0
// The AVX-512 kernel table with the AVX512_BF16 narrowing (bfloat16 rows only differ from
// "avx512"), compiled with the AVX-512 flags plus -mavx512bf16 -mavx512dq (see sources.cmake).
// Invariant: no kernel in this file runs unless dispatch saw everything "avx512" needs plus
// avx512bf16 and avx512dq on this CPU; the table itself is constant data.
#include "reduce/kernel_rows.h"

namespace smddp::reduce {

namespace {
constexpr KernelTable kTable = makeTable("avx512bf16");  // constant data: no code runs to build it
}  // namespace

const KernelTable* avx512Bf16Kernels() { return &kTable; }

}  // namespace smddp::reduce
