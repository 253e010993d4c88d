// SPDX-License-Identifier: Apache-2.0
// Every (dtype, op) kernel of every ISA table this build compiled and this CPU runs, against the
// independent reference in reduce_test_util.h: random data, awkward counts (vector widths +-1,
// the 64-element fp16 block +-1), pointers offset by one element, dst aliasing a or b exactly, and
// guard bytes that must survive (no overrun past count).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "reduce/kernel_table.h"
#include "reduce/reducer.h"
#include "reduce_test_util.h"

namespace smddp::reduce {
namespace {

using testing::allDataTypes;
using testing::allReduceOps;

constexpr size_t kCounts[] = {0, 1, 2, 3, 7, 15, 16, 17, 31, 33, 63, 64, 65, 1000, 4099};
constexpr uint8_t kGuard = 0xA5;
constexpr size_t kGuardBytes = 64;

enum class Alias { kNone, kDstIsA, kDstIsB };
const char* aliasName(Alias a) {
  return a == Alias::kNone ? "separate" : a == Alias::kDstIsA ? "dst==a" : "dst==b";
}

// One 64-byte-aligned allocation per operand; data starts `offset` elements in, followed by
// guard bytes.
struct Operand {
  std::vector<uint8_t> storage;
  uint8_t* data;
  size_t bytes;
  Operand(size_t count, size_t elemSize, size_t offset) : bytes(count * elemSize) {
    storage.assign(bytes + offset * elemSize + kGuardBytes + 128, kGuard);
    uintptr_t base = (reinterpret_cast<uintptr_t>(storage.data()) + 63) & ~uintptr_t(63);
    data = reinterpret_cast<uint8_t*>(base) + offset * elemSize;
  }
  bool guardIntact() const {
    return std::all_of(data + bytes, data + bytes + kGuardBytes,
                       [](uint8_t v) { return v == kGuard; });
  }
};

std::string showElement(DataType d, const void* p, size_t i) {
  if (testing::isInteger(d)) {
    const __int128 v = testing::loadInt(d, p, i);
    return v < 0 ? std::to_string(static_cast<long long>(v))
                 : std::to_string(static_cast<unsigned long long>(v));
  }
  if (isComplex(d)) {
    const bool dbl = d == DataType::kComplex128;
    const double re = dbl ? static_cast<const double*>(p)[2 * i] : static_cast<const float*>(p)[2 * i];
    const double im =
        dbl ? static_cast<const double*>(p)[2 * i + 1] : static_cast<const float*>(p)[2 * i + 1];
    return std::to_string(re) + "+" + std::to_string(im) + "i";
  }
  return std::to_string(testing::loadFloat(d, p, i));
}

std::string describe(const KernelTable& t, DataType d, ReduceOp op, size_t count, size_t offset,
                     Alias alias) {
  return std::string("isa=") + t.name + " dtype=" + toString(d) + " op=" + toString(op) +
         " count=" + std::to_string(count) + " offset=" + std::to_string(offset) + " " +
         aliasName(alias);
}

// Runs one configuration; returns false (after reporting the first bad index) on mismatch.
bool checkOne(const KernelTable& t, DataType d, ReduceOp op, size_t count, size_t offset,
              Alias alias, std::mt19937_64& rng) {
  size_t sz = dataTypeSize(d);
  Operand a(count, sz, offset), b(count, sz, offset), dst(count, sz, offset);
  testing::fillRandom(d, a.data, count, rng);
  testing::fillRandom(d, b.data, count, rng);
  std::vector<uint8_t> want(count * sz + 1);
  for (size_t i = 0; i < count; ++i)
    testing::referenceElement(d, op, a.data, b.data, want.data(), i);
  uint8_t* out = alias == Alias::kDstIsA ? a.data : alias == Alias::kDstIsB ? b.data : dst.data;
  ReduceFn fn = t.reduce[int(d)][int(op)];
  EXPECT_NE(fn, nullptr) << describe(t, d, op, count, offset, alias);
  if (fn == nullptr) return false;
  fn(out, a.data, b.data, count);
  for (size_t i = 0; i < count; ++i) {
    if (!testing::sameElement(d, op, out, want.data(), i)) {
      ADD_FAILURE() << describe(t, d, op, count, offset, alias) << " index=" << i
                    << ": got=" << showElement(d, out, i)
                    << " want=" << showElement(d, want.data(), i);
      return false;
    }
  }
  Operand* written = alias == Alias::kDstIsA ? &a : alias == Alias::kDstIsB ? &b : &dst;
  EXPECT_TRUE(written->guardIntact())
      << describe(t, d, op, count, offset, alias) << ": wrote past the last element";
  return written->guardIntact();
}

TEST(ReduceKernels, EveryIsaDtypeOpCountOffsetAlias) {
  std::mt19937_64 rng(20240611);
  for (const KernelTable* t : availableKernels()) {
    for (DataType d : allDataTypes()) {
      for (ReduceOp op : allReduceOps()) {
        if (!supported(d, op)) continue;
        int failures = 0;
        for (size_t count : kCounts) {
          for (size_t offset : {0, 1}) {
            for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
              if (!checkOne(*t, d, op, count, offset, alias, rng)) ++failures;
            }
          }
        }
        EXPECT_EQ(failures, 0) << "isa=" << t->name << " dtype=" << toString(d)
                               << " op=" << toString(op);
      }
    }
  }
}

// dst == a == b: x op x, for every kernel.
TEST(ReduceKernels, AllThreeOperandsAliased) {
  std::mt19937_64 rng(7);
  for (const KernelTable* t : availableKernels()) {
    for (DataType d : allDataTypes()) {
      for (ReduceOp op : allReduceOps()) {
        if (!supported(d, op)) continue;
        size_t count = 4099, sz = dataTypeSize(d);
        std::vector<uint8_t> buf(count * sz), want(count * sz);
        testing::fillRandom(d, buf.data(), count, rng);
        for (size_t i = 0; i < count; ++i)
          testing::referenceElement(d, op, buf.data(), buf.data(), want.data(), i);
        t->reduce[int(d)][int(op)](buf.data(), buf.data(), buf.data(), count);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_TRUE(testing::sameElement(d, op, buf.data(), want.data(), i))
              << "isa=" << t->name << " dtype=" << toString(d) << " op=" << toString(op)
              << " index=" << i;
        }
      }
    }
  }
}

// The table of supported pairs is the same in every ISA, and matches supported().
TEST(ReduceKernels, TablesMatchSupported) {
  for (const KernelTable* t : availableKernels()) {
    for (DataType d : allDataTypes()) {
      for (ReduceOp op : allReduceOps()) {
        EXPECT_EQ(t->reduce[int(d)][int(op)] != nullptr, supported(d, op))
            << "isa=" << t->name << " dtype=" << toString(d) << " op=" << toString(op);
      }
      EXPECT_EQ(t->average[int(d)] != nullptr, reductionDefined(d, ReduceOp::kAvg))
          << "isa=" << t->name << " dtype=" << toString(d);
    }
  }
}

#if defined(__x86_64__)
// Every ISA that was compiled and that this CPU supports must be among the tested tables.
TEST(ReduceKernels, EveryRunnableCompiledIsaIsTested) {
  __builtin_cpu_init();
  bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
              __builtin_cpu_supports("fma");
  bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                __builtin_cpu_supports("avx512vl");
  bool avx512bf16 =
      avx512 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512dq");
  std::vector<std::string> names;
  for (const KernelTable* t : availableKernels()) names.push_back(t->name);
  auto has = [&](const char* n) { return std::find(names.begin(), names.end(), n) != names.end(); };
  EXPECT_TRUE(has("baseline"));
  EXPECT_EQ(has("avx2"), avx2 && avx2Kernels() != nullptr);
  EXPECT_EQ(has("avx512"), avx512 && avx512Kernels() != nullptr);
  EXPECT_EQ(has("avx512bf16"), avx512bf16 && avx512Bf16Kernels() != nullptr);
  EXPECT_STREQ(isaName(), names.front().c_str()) << "dispatch must pick the best table";
}
#endif

}  // namespace
}  // namespace smddp::reduce
