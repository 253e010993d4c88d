// SPDX-License-Identifier: Apache-2.0
// The per-ISA table of reduction kernels and the dispatch that picks one. Each ISA's table is built
// by its own translation unit (kernels_<isa>.cc, compiled with that ISA's flags); reducer.cc picks
// the best one the CPU supports, once, on first use.
// Invariant: a table entry is null exactly when reductionDefined(dtype, op) is false (average:
// when the dtype has no AVG); a table is only returned if this CPU can run its code.
#pragma once

#include <cstddef>
#include <vector>

#include "smddp/types.h"

namespace smddp::reduce {

using ReduceFn = void (*)(void* dst, const void* a, const void* b, size_t count);
using AverageFn = void (*)(void* buf, size_t count, int divisor);

struct KernelTable {
  const char* name;
  ReduceFn reduce[kNumDataTypes][kNumReduceOps];
  AverageFn average[kNumDataTypes];
};

// Tables compiled into this build. Each getter returns nullptr when the build did not compile
// that ISA (non-x86 targets, or a compiler without the flags). The getters only
// return the address of constant data, so they are safe on any CPU; calling a kernel of a table
// the CPU cannot run is not, so callers use availableKernels().
const KernelTable* baselineKernels();
const KernelTable* avx2Kernels();
const KernelTable* avx512Kernels();
const KernelTable* avx512Bf16Kernels();

// The tables that are compiled in and that this CPU supports, best first. Tests run every one.
std::vector<const KernelTable*> availableKernels();

// The table in use: the first of availableKernels(), unless forceIsa() chose another.
const KernelTable& activeKernels();

}  // namespace smddp::reduce
