// SPDX-License-Identifier: Apache-2.0
// The CUDA reducer: the one table of instantiated (dtype, op) kernels, argument checks, and the
// launches. Launch geometry comes from the pure planner (launch_plan.h).
// Invariants: a table entry is non-null exactly when supportedCuda(dtype, op) holds (checked at
// compile time for the dtypes/ops the CPU reducer supports); every argument check runs before the
// first CUDA call; a failed launch raises Error(kInternal) naming dtype, op, count and the CUDA
// error string.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "reduce/cuda/kernels_cuda.cuh"
#include "reduce/cuda/reducer_cuda.h"
#include "reduce/storage_types.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

using cudak::BFloat16;
using cudak::Half;
using cudak::Complex;
using cudak::Float8;

using LaunchFn = void (*)(void* dst, const void* a, const void* b, const LaunchPlan& plan,
                          cudaStream_t stream);
using AverageLaunchFn = void (*)(void* buf, int divisor, const LaunchPlan& plan,
                                 cudaStream_t stream);
using LoadFn = cudaError_t (*)();

template <class T, class Op>
void launchReduce(void* dst, const void* a, const void* b, const LaunchPlan& p, cudaStream_t st) {
  cudak::reduceKernel<T, Op><<<p.grid, p.block, 0, st>>>(
      static_cast<T*>(dst), static_cast<const T*>(a), static_cast<const T*>(b), cudak::shapeOf(p));
}

// Asking for a kernel's attributes loads it into the current context (CUDA loads lazily).
template <class T, class Op>
cudaError_t loadReduce() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, cudak::reduceKernel<T, Op>);
}

template <class T>
cudaError_t loadAverage() {
  cudaFuncAttributes attributes;
  return cudaFuncGetAttributes(&attributes, cudak::averageKernel<T>);
}

template <class T>
void launchAverage(void* buf, int divisor, const LaunchPlan& p, cudaStream_t st) {
  cudak::averageKernel<T>
      <<<p.grid, p.block, 0, st>>>(static_cast<T*>(buf), divisor, cudak::shapeOf(p));
}

struct CudaTable {
  LaunchFn reduce[kNumDataTypes][kNumReduceOps];
  AverageLaunchFn average[kNumDataTypes];
  LoadFn load[kNumDataTypes][kNumReduceOps];
  LoadFn loadAverage[kNumDataTypes];
  size_t elemSize[kNumDataTypes];
};

template <class T, DataType D, ReduceOp kOp>
constexpr void fillOp(CudaTable& t) {
  if constexpr (reductionDefined(D, kOp)) {
    using Op = typename OpFor<D, kOp>::type;
    t.reduce[int(D)][int(kOp)] = &launchReduce<T, Op>;
    // AVG launches the SUM kernel: loading SUM covers it.
    if constexpr (kOp != ReduceOp::kAvg) t.load[int(D)][int(kOp)] = &loadReduce<T, Op>;
  }
}

template <class T, DataType D>
constexpr void fillRow(CudaTable& t) {
  t.elemSize[int(D)] = sizeof(T);
#define SMDDP_FILL_OP(OP) fillOp<T, D, ReduceOp::OP>(t);
  SMDDP_REDUCE_OPS(SMDDP_FILL_OP)
#undef SMDDP_FILL_OP
  if constexpr (reductionDefined(D, ReduceOp::kAvg)) {
    t.average[int(D)] = &launchAverage<T>;
    t.loadAverage[int(D)] = &loadAverage<T>;
  }
}

// The one table of what is instantiated: every pair reductionDefined() names, as on the CPU.
constexpr CudaTable makeTable() {
  CudaTable t = {};
#define SMDDP_FILL_ROW(T, D) fillRow<T, DataType::D>(t);
  SMDDP_REDUCE_STORAGE_TYPES(SMDDP_FILL_ROW)
#undef SMDDP_FILL_ROW
  return t;
}
constexpr CudaTable kTable = makeTable();

// The same pairs as the CPU reducer (reductionDefined), each with a size and a loader.
constexpr bool tableMatchesCpuPairs() {
  for (int d = 0; d < kNumDataTypes; ++d) {
    const bool avg = reductionDefined(DataType(d), ReduceOp::kAvg);
    for (int op = 0; op < kNumReduceOps; ++op) {
      const bool expected = reductionDefined(DataType(d), ReduceOp(op));
      if ((kTable.reduce[d][op] != nullptr) != expected) return false;
      if ((kTable.load[d][op] != nullptr) != (expected && op != int(ReduceOp::kAvg))) return false;
    }
    if ((kTable.average[d] != nullptr) != avg || kTable.elemSize[d] == 0) return false;
    if ((kTable.loadAverage[d] != nullptr) != avg) return false;
  }
  return true;
}
static_assert(tableMatchesCpuPairs(), "CUDA kernel table disagrees with the supported pairs");

bool validPair(DataType dtype, ReduceOp op) {
  return int(dtype) < kNumDataTypes && int(op) < kNumReduceOps;  // enums are unsigned
}

std::string callName(const char* fn, DataType dtype, ReduceOp op, size_t count) {
  return std::string(fn) + ": dtype " + toString(dtype) + ", op " + toString(op) + ", count " +
         std::to_string(count);
}

[[noreturn]] void throwUnsupported(const char* fn, DataType dtype, ReduceOp op) {
  std::string msg = std::string(fn) + ": op " + toString(op) + " is not supported for dtype " +
                    toString(dtype) + " on CUDA (" + reductionRefusal(dtype, op) + ")";
  throw Error(ErrorCode::kUnsupported, msg);
}

void checkCuda(cudaError_t err, const std::string& call, const char* what) {
  if (err == cudaSuccess) return;
  bool noDevice = err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver;
  throw Error(noDevice ? ErrorCode::kUnsupported : ErrorCode::kInternal,
              call + ": " + what + " failed: " + cudaGetErrorName(err) + " (" +
                  cudaGetErrorString(err) + ")");
}

// Multiprocessors of the current device, cached per thread for the last device it used.
int currentSmCount(const std::string& call) {
  thread_local int cachedDevice = -1;
  thread_local int cachedSms = 0;
  int device = 0;
  checkCuda(cudaGetDevice(&device), call, "cudaGetDevice");
  if (device != cachedDevice) {
    int sms = 0;
    checkCuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), call,
              "cudaDeviceGetAttribute(MultiProcessorCount)");
    cachedDevice = device;
    cachedSms = sms;
  }
  return cachedSms;
}

// Exact aliasing is fine (each element is read before written); partial overlap is not.
bool partialOverlap(uintptr_t x, uintptr_t y, size_t bytes) {
  return x != y && x < y + bytes && y < x + bytes;
}

LaunchPlan checkedPlan(const std::string& call, const uintptr_t* addrs, int n, size_t count,
                       size_t elemSize) {
  for (int i = 0; i < n; ++i) {
    if (addrs[i] == 0) throw Error(ErrorCode::kInvalidArgument, call + ": null pointer");
    if (addrs[i] % elemSize != 0) {
      throw Error(ErrorCode::kInvalidArgument, call + ": pointer " + std::to_string(addrs[i]) +
                                                   " is not aligned to the " +
                                                   std::to_string(elemSize) + "-byte element size");
    }
    for (int j = 0; j < i; ++j) {
      if (partialOverlap(addrs[i], addrs[j], count * elemSize)) {
        throw Error(ErrorCode::kInvalidArgument,
                    call + ": operands overlap partially (only exact aliasing is allowed)");
      }
    }
  }
  return planLaunch(addrs, n, count, elemSize, currentSmCount(call));
}

}  // namespace

bool supportedCuda(DataType dtype, ReduceOp op) {
  return validPair(dtype, op) && kTable.reduce[int(dtype)][int(op)] != nullptr;
}

void reduceCuda(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b, size_t count,
                void* stream) {
  if (!supportedCuda(dtype, op)) throwUnsupported("reduceCuda", dtype, op);
  if (count == 0) return;
  const std::string call = callName("reduceCuda", dtype, op, count);
  const uintptr_t addrs[3] = {reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(a),
                              reinterpret_cast<uintptr_t>(b)};
  LaunchPlan plan = checkedPlan(call, addrs, 3, count, kTable.elemSize[int(dtype)]);
  auto st = static_cast<cudaStream_t>(stream);
  kTable.reduce[int(dtype)][int(op)](dst, a, b, plan, st);
  checkCuda(cudaGetLastError(), call, "kernel launch");
}

void finishAverageCuda(DataType dtype, void* buf, size_t count, int divisor, void* stream) {
  if (!validPair(dtype, ReduceOp::kAvg) || kTable.average[int(dtype)] == nullptr) {
    throwUnsupported("finishAverageCuda", dtype, ReduceOp::kAvg);
  }
  const std::string call = callName("finishAverageCuda", dtype, ReduceOp::kAvg, count);
  if (divisor <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                call + ": divisor " + std::to_string(divisor) + " must be positive");
  }
  if (count == 0) return;
  const uintptr_t addr = reinterpret_cast<uintptr_t>(buf);
  LaunchPlan plan = checkedPlan(call, &addr, 1, count, kTable.elemSize[int(dtype)]);
  kTable.average[int(dtype)](buf, divisor, plan, static_cast<cudaStream_t>(stream));
  checkCuda(cudaGetLastError(), call, "kernel launch");
}

void loadKernelsCuda() {
  const std::string call = "loadKernelsCuda";
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int op = 0; op < kNumReduceOps; ++op) {
      if (kTable.load[d][op] != nullptr)
        checkCuda(kTable.load[d][op](), call, "cudaFuncGetAttributes");
    }
    if (kTable.loadAverage[d] != nullptr) {
      checkCuda(kTable.loadAverage[d](), call, "cudaFuncGetAttributes");
    }
  }
}

}  // namespace smddp::reduce
