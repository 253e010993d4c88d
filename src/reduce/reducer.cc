// SPDX-License-Identifier: Apache-2.0
// The public CPU reducer: argument checks, errors, and the runtime ISA dispatch. The choice of
// kernel table is made once, on first use, by a thread-safe function-local static; forceIsa() (for
// tests and A/B runs) overrides it through an atomic pointer.
// Invariant: no table is ever selected unless this build compiled it and this CPU can run it, and
// every unsupported (dtype, op) is rejected here, before any kernel is called.
#include "reduce/reducer.h"

#include <atomic>
#include <cstring>
#include <string>

#include "reduce/kernel_table.h"
#include "smddp/error.h"

namespace smddp::reduce {

#if !defined(SMDDP_REDUCE_HAVE_AVX2)
const KernelTable* avx2Kernels() { return nullptr; }
#endif
#if !defined(SMDDP_REDUCE_HAVE_AVX512)
const KernelTable* avx512Kernels() { return nullptr; }
#endif
#if !defined(SMDDP_REDUCE_HAVE_AVX512BF16)
const KernelTable* avx512Bf16Kernels() { return nullptr; }
#endif

namespace {

#if defined(__x86_64__) || defined(__i386__)
bool cpuRunsAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
         __builtin_cpu_supports("fma");
}
bool cpuRunsAvx512() {
  return cpuRunsAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl");
}
#if defined(SMDDP_REDUCE_HAVE_AVX512BF16)  // a compiler without the flags may lack the name too
bool cpuRunsAvx512Bf16() {
  return cpuRunsAvx512() && __builtin_cpu_supports("avx512bf16") &&
         __builtin_cpu_supports("avx512dq");
}
#else
bool cpuRunsAvx512Bf16() { return false; }
#endif
#else
bool cpuRunsAvx2() { return false; }
bool cpuRunsAvx512() { return false; }
bool cpuRunsAvx512Bf16() { return false; }
#endif

std::atomic<const KernelTable*> gForced{nullptr};

[[noreturn]] void throwUnsupported(const char* what, DataType dtype, ReduceOp op) {
  std::string msg = std::string("reduce: ") + what + ": op " + toString(op) +
                    " is not supported for dtype " + toString(dtype) + " (" +
                    reductionRefusal(dtype, op) + ")";
  throw Error(ErrorCode::kUnsupported, msg);
}

}  // namespace

std::vector<const KernelTable*> availableKernels() {
  std::vector<const KernelTable*> tables;
  if (cpuRunsAvx512Bf16() && avx512Bf16Kernels() != nullptr) {
    tables.push_back(avx512Bf16Kernels());
  }
  if (cpuRunsAvx512() && avx512Kernels() != nullptr) tables.push_back(avx512Kernels());
  if (cpuRunsAvx2() && avx2Kernels() != nullptr) tables.push_back(avx2Kernels());
  tables.push_back(baselineKernels());
  return tables;
}

const KernelTable& activeKernels() {
  static const KernelTable* const best = availableKernels().front();
  const KernelTable* forced = gForced.load(std::memory_order_acquire);
  return forced != nullptr ? *forced : *best;
}

void forceIsa(const char* name) {
  if (name == nullptr || *name == '\0') {
    gForced.store(nullptr, std::memory_order_release);
    return;
  }
  for (const KernelTable* t : availableKernels()) {
    if (std::strcmp(t->name, name) == 0) {
      gForced.store(t, std::memory_order_release);
      return;
    }
  }
  throw Error(ErrorCode::kUnsupported, std::string("reduce: ISA '") + name +
                                           "' is not compiled into this build or not supported "
                                           "by this CPU");
}

bool supported(DataType dtype, ReduceOp op) { return reductionDefined(dtype, op); }

void reduce(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count) {
  if (!supported(dtype, op)) throwUnsupported("reduce", dtype, op);
  if (count == 0) return;
  activeKernels().reduce[int(dtype)][int(op)](dst, a, b, count);
}

void finishAverage(DataType dtype, void* buf, size_t count, int divisor) {
  if (!reductionDefined(dtype, ReduceOp::kAvg)) {
    throwUnsupported("finishAverage", dtype, ReduceOp::kAvg);
  }
  if (divisor <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "reduce: finishAverage: divisor " +
                                                 std::to_string(divisor) + " for dtype " +
                                                 toString(dtype) + " must be positive");
  }
  if (count == 0) return;
  activeKernels().average[int(dtype)](buf, count, divisor);
}

const char* isaName() { return activeKernels().name; }

}  // namespace smddp::reduce
