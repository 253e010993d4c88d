// SPDX-License-Identifier: Apache-2.0
// Throughput of the CPU reduction kernels, per ISA table, next to memcpy of the same buffer size
// (the physical limit: one core streaming memory). GB/s counts bytes moved, in units of 1e9:
// reduce moves 3 bytes per output byte (read a, read b, write dst), memcpy 2 (read, write).
// Invariant: every kernel benchmarked is one that availableKernels() says this CPU can run, and
// the buffers hold non-trivial data (no denormal slow paths, no all-zero pages).
//
//   reduce_bench --benchmark_filter='float32/sum'      # one kernel, every ISA and size
#include <benchmark/benchmark.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "reduce/kernel_table.h"
#include "reduce/reducer.h"

namespace {

using smddp::DataType;
using smddp::ReduceOp;
using smddp::reduce::KernelTable;

constexpr size_t kSizes[] = {size_t(64) << 10, size_t(1) << 20, size_t(8) << 20, size_t(64) << 20,
                             size_t(256) << 20};

struct Buffers {
  std::vector<uint8_t> a, b, dst;
  explicit Buffers(size_t bytes) : a(bytes), b(bytes), dst(bytes) {
    // Small positive integers stored as whatever the dtype is: never denormal, never NaN.
    for (size_t i = 0; i < bytes; ++i) {
      a[i] = uint8_t(0x3C + (i % 3));
      b[i] = uint8_t(0x3C + (i % 5));
    }
  }
};

void setRate(benchmark::State& state, size_t movedPerIteration) {
  state.counters["GB/s"] =
      benchmark::Counter(double(movedPerIteration), benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
}

void benchReduce(benchmark::State& state, const KernelTable* table, DataType dtype, ReduceOp op,
                 bool inPlace, size_t bytes) {
  Buffers buf(bytes);
  size_t count = bytes / smddp::dataTypeSize(dtype);
  auto fn = table->reduce[int(dtype)][int(op)];
  void* out = inPlace ? static_cast<void*>(buf.a.data()) : buf.dst.data();
  for (auto _ : state) {
    fn(out, buf.a.data(), buf.b.data(), count);
    // In place, the values only grow (to inf at worst, which has no slow path on x86); they
    // never become denormal, so the timing is the memory system's, not a microcode assist's.
    benchmark::ClobberMemory();
  }
  setRate(state, 3 * bytes);
}

void benchMemcpy(benchmark::State& state, size_t bytes) {
  Buffers buf(bytes);
  for (auto _ : state) {
    std::memcpy(buf.dst.data(), buf.a.data(), bytes);
    benchmark::ClobberMemory();
  }
  setRate(state, 2 * bytes);
}

std::string sizeName(size_t bytes) {
  return bytes >= (size_t(1) << 20) ? std::to_string(bytes >> 20) + "MiB"
                                    : std::to_string(bytes >> 10) + "KiB";
}

void registerAll() {
  struct Kernel {
    DataType dtype;
    ReduceOp op;
    bool inPlace;
  };
  const Kernel kernels[] = {
      {DataType::kFloat32, ReduceOp::kSum, true}, {DataType::kFloat32, ReduceOp::kSum, false},
      {DataType::kFloat32, ReduceOp::kMax, true}, {DataType::kFloat64, ReduceOp::kSum, true},
      {DataType::kFloat16, ReduceOp::kSum, true}, {DataType::kBFloat16, ReduceOp::kSum, true},
      {DataType::kInt32, ReduceOp::kSum, true},   {DataType::kInt8, ReduceOp::kProd, true},
  };
  for (size_t bytes : kSizes) {
    benchmark::RegisterBenchmark(("memcpy/" + sizeName(bytes)).c_str(), benchMemcpy, bytes)
        ->UseRealTime();
    for (const KernelTable* t : smddp::reduce::availableKernels()) {
      for (const Kernel& k : kernels) {
        std::string name = std::string(t->name) + "/" + smddp::toString(k.dtype) + "/" +
                           smddp::toString(k.op) + (k.inPlace ? "/inplace/" : "/outofplace/") +
                           sizeName(bytes);
        benchmark::RegisterBenchmark(name.c_str(), benchReduce, t, k.dtype, k.op, k.inPlace, bytes)
            ->UseRealTime();
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  registerAll();
  benchmark::AddCustomContext("reduce_isa", smddp::reduce::isaName());
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
