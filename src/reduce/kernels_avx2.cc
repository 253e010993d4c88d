// SPDX-License-Identifier: Apache-2.0
// The AVX2 kernel table, compiled with -mavx2 -mf16c -mfma (see sources.cmake); float16 uses the
// F16C conversion instructions.
// Invariant: no kernel in this file runs unless dispatch saw avx2, f16c and fma on this CPU; the
// table itself is constant data, so avx2Kernels() is safe to call on any CPU.
#include "reduce/kernel_rows.h"

namespace smddp::reduce {

namespace {
constexpr KernelTable kTable = makeTable("avx2");  // constant data: no code runs to build it
}  // namespace

const KernelTable* avx2Kernels() { return &kTable; }

}  // namespace smddp::reduce
