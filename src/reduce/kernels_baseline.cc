// SPDX-License-Identifier: Apache-2.0
// The baseline kernel table: plain x86-64 (SSE2) or whatever the target's default ISA is, built
// with the library's ordinary flags plus auto-vectorization. Runs on every CPU this build targets.
// Invariant: this file gets no ISA flags, so nothing here can fault on an older CPU.
#include "reduce/kernel_rows.h"

namespace smddp::reduce {

namespace {
constexpr KernelTable kTable = makeTable("baseline");  // constant data: no code runs to build it
}  // namespace

const KernelTable* baselineKernels() { return &kTable; }

}  // namespace smddp::reduce
