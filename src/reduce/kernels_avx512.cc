// SPDX-License-Identifier: Apache-2.0
// The AVX-512 kernel table, compiled with -mavx512f -mavx512bw -mavx512vl plus the AVX2 set and
// 512-bit vectors preferred (see sources.cmake).
// Invariant: no kernel in this file runs unless dispatch saw avx512f/bw/vl, avx2, f16c and fma on
// this CPU (and the OS saving zmm state, which __builtin_cpu_supports checks); the table itself is
// constant data, so avx512Kernels() is safe to call on any CPU.
#include "reduce/kernel_rows.h"

namespace smddp::reduce {

namespace {
constexpr KernelTable kTable = makeTable("avx512");  // constant data: no code runs to build it
}  // namespace

const KernelTable* avx512Kernels() { return &kTable; }

}  // namespace smddp::reduce
