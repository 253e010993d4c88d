// SPDX-License-Identifier: Apache-2.0
// float16/bfloat16 rounding edge cases, NaN semantics of every floating type, and finishAverage,
// on every ISA table this build compiled and this CPU runs. Expected values are hard-coded bit
// patterns derived by hand (the derivation is in each case's comment), not computed by the code
// under test. Each case list is tiled over 67 elements so both the whole-block and tail paths run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "reduce/kernel_table.h"
#include "reduce/reducer.h"
#include "reduce_test_util.h"

namespace smddp::reduce {
namespace {

constexpr uint16_t kNanBits = 0xFFFF;  // marker: any NaN is expected
constexpr size_t kTiled = 67;

struct Case16 {
  ReduceOp op;
  uint16_t a, b, want;
  const char* why;
};

// float16: 1.0 = 0x3C00 (ulp 2^-10), 2^-11 = 0x1000, 65504 = 0x7BFF (max), 16 = 0x4C00,
// 8 = 0x4800, 2^-12 = 0x0C00, 2^-13 = 0x0800, 1.5*2^-12 = 0x0E00, 2^12 = 0x6C00.
const Case16 kHalfCases[] = {
    {ReduceOp::kSum, 0x3C00, 0x1000, 0x3C00, "1 + 2^-11 is a tie: stays at even 1.0"},
    {ReduceOp::kSum, 0x3C01, 0x1000, 0x3C02, "1+2^-10 + 2^-11 is a tie: up to even 0x3C02"},
    {ReduceOp::kSum, 0x7BFF, 0x7BFF, 0x7C00, "65504 + 65504 overflows to +inf"},
    {ReduceOp::kSum, 0x7BFF, 0x4C00, 0x7C00, "65504 + 16 = 65520, tie above max: inf (even)"},
    {ReduceOp::kSum, 0x7BFF, 0x4800, 0x7BFF, "65504 + 8 = 65512 rounds back to max"},
    {ReduceOp::kSum, 0xFBFF, 0xCC00, 0xFC00, "-65504 - 16 rounds to -inf"},
    {ReduceOp::kProd, 0x7BFF, 0x4000, 0x7C00, "65504 * 2 overflows to +inf"},
    {ReduceOp::kSum, 0x0001, 0x0001, 0x0002, "subnormal + subnormal"},
    {ReduceOp::kSum, 0x03FF, 0x0001, 0x0400, "largest subnormal + 2^-24 = smallest normal"},
    {ReduceOp::kProd, 0x0001, 0x6C00, 0x0C00, "subnormal input widens exactly: 2^-24*2^12"},
    {ReduceOp::kProd, 0x0C00, 0x0C00, 0x0001, "2^-12 * 2^-12 = 2^-24, smallest subnormal"},
    {ReduceOp::kProd, 0x0C00, 0x0800, 0x0000, "2^-25 is a tie between 0 and 2^-24: even 0"},
    {ReduceOp::kProd, 0x0E00, 0x0800, 0x0001, "0.75 * 2^-24 rounds to 2^-24"},
    {ReduceOp::kProd, 0x0E00, 0x0C00, 0x0002, "1.5 * 2^-24 is a tie: even 2 * 2^-24"},
    {ReduceOp::kProd, 0x8C00, 0x0C00, 0x8001, "sign survives into the subnormal range"},
    {ReduceOp::kSum, 0x7E00, 0x3C00, kNanBits, "NaN + 1 is NaN"},
    {ReduceOp::kSum, 0x7C00, 0xFC00, kNanBits, "inf + -inf is NaN"},
    {ReduceOp::kProd, 0x7C00, 0x0000, kNanBits, "inf * 0 is NaN"},
    {ReduceOp::kMin, 0x7E00, 0x3C00, kNanBits, "min(NaN, 1) is NaN"},
    {ReduceOp::kMin, 0x3C00, 0x7E00, kNanBits, "min(1, NaN) is NaN"},
    {ReduceOp::kMax, 0xFC00, 0x7E01, kNanBits, "max(-inf, NaN) is NaN"},
    {ReduceOp::kMax, 0x7E00, 0xFC00, kNanBits, "max(NaN, -inf) is NaN"},
    {ReduceOp::kMin, 0xFC00, 0x7BFF, 0xFC00, "min(-inf, max) = -inf"},
    {ReduceOp::kMax, 0x0001, 0x8001, 0x0001, "max of +-smallest subnormal"},
};

// bfloat16: 1.0 = 0x3F80 (ulp 2^-7), 2^-8 = 0x3B80, max = 0x7F7F = (2-2^-7)*2^127 (ulp 2^120),
// 2^119 = 0x7B00, 2^118 = 0x7A80, 2^-70 = 0x1C80.
const Case16 kBf16Cases[] = {
    {ReduceOp::kSum, 0x3F80, 0x3B80, 0x3F80, "1 + 2^-8 is a tie: stays at even 1.0"},
    {ReduceOp::kSum, 0x3F81, 0x3B80, 0x3F82, "1+2^-7 + 2^-8 is a tie: up to even 0x3F82"},
    {ReduceOp::kSum, 0x7F7F, 0x7F7F, 0x7F80, "max + max overflows to +inf"},
    {ReduceOp::kSum, 0x7F7F, 0x7B00, 0x7F80, "max + half ulp is a tie above max: inf (even)"},
    {ReduceOp::kSum, 0x7F7F, 0x7A80, 0x7F7F, "max + quarter ulp rounds back to max"},
    {ReduceOp::kSum, 0xFF7F, 0xFB00, 0xFF80, "-max - half ulp rounds to -inf"},
    {ReduceOp::kProd, 0x7F7F, 0x4000, 0x7F80, "max * 2 overflows to +inf"},
    {ReduceOp::kSum, 0x0001, 0x0001, 0x0002, "subnormal + subnormal"},
    {ReduceOp::kProd, 0x1C80, 0x1C80, 0x0000, "2^-140 underflows to 0"},
    {ReduceOp::kSum, 0x0080, 0x8001, 0x007F, "smallest normal - 2^-133: largest subnormal"},
    {ReduceOp::kProd, 0x0080, 0x3F00, 0x0040, "smallest normal * 0.5: a subnormal, not flushed"},
    {ReduceOp::kSum, 0x7FC0, 0x3F80, kNanBits, "NaN + 1 is NaN"},
    {ReduceOp::kSum, 0x7FFF, 0x0000, kNanBits, "NaN with a full payload stays NaN, not inf"},
    {ReduceOp::kSum, 0x7F80, 0xFF80, kNanBits, "inf + -inf is NaN"},
    {ReduceOp::kMin, 0x7FC0, 0x3F80, kNanBits, "min(NaN, 1) is NaN"},
    {ReduceOp::kMin, 0x3F80, 0xFFC1, kNanBits, "min(1, -NaN) is NaN"},
    {ReduceOp::kMax, 0xFF80, 0x7FC0, kNanBits, "max(-inf, NaN) is NaN"},
    {ReduceOp::kMax, 0x7FC0, 0x3F80, kNanBits, "max(NaN, 1) is NaN"},
    {ReduceOp::kMax, 0x3F80, 0x4000, 0x4000, "max(1, 2) = 2"},
};

bool isNan16(DataType d, uint16_t bits) {
  return std::isnan(testing::decode16(bits, testing::formatOf(d)));
}

template <size_t N>
void runCases16(const KernelTable& t, DataType d, const Case16 (&cases)[N]) {
  for (const Case16& c : cases) {
    std::vector<uint16_t> a(kTiled, c.a), b(kTiled, c.b), out(kTiled, 0x1234);
    t.reduce[int(d)][int(c.op)](out.data(), a.data(), b.data(), kTiled);
    for (size_t i = 0; i < kTiled; ++i) {
      bool ok = c.want == kNanBits ? isNan16(d, out[i]) : out[i] == c.want;
      ASSERT_TRUE(ok) << "isa=" << t.name << " dtype=" << toString(d) << " op=" << toString(c.op)
                      << " index=" << i << " (" << c.why << "): a=0x" << std::hex << c.a << " b=0x"
                      << c.b << " got=0x" << out[i] << " want=0x" << c.want;
    }
  }
}

TEST(ReduceRounding, Float16EdgeCases) {
  for (const KernelTable* t : availableKernels()) runCases16(*t, DataType::kFloat16, kHalfCases);
}

TEST(ReduceRounding, BFloat16EdgeCases) {
  for (const KernelTable* t : availableKernels()) runCases16(*t, DataType::kBFloat16, kBf16Cases);
}

// One lane with a subnormal result among normal ones, at every position of a few blocks: a
// kernel that narrows groups of lanes at once must send exactly that lane's group the exact way
// and write every lane where it belongs. 1 + 1 = 2 (0x4000); 2^-126 - 2^-133 = 0x007F.
TEST(ReduceRounding, BFloat16SubnormalLaneAmongNormals) {
  constexpr size_t kCount = 3 * 64 + 5;
  for (const KernelTable* t : availableKernels()) {
    for (size_t at = 0; at < kCount; ++at) {
      std::vector<uint16_t> a(kCount, 0x3F80), b(kCount, 0x3F80), out(kCount, 0x1234);
      a[at] = 0x0080;
      b[at] = 0x8001;
      t->reduce[int(DataType::kBFloat16)][int(ReduceOp::kSum)](out.data(), a.data(), b.data(),
                                                               kCount);
      for (size_t i = 0; i < kCount; ++i) {
        ASSERT_EQ(out[i], i == at ? 0x007F : 0x4000)
            << "isa=" << t->name << " subnormal lane " << at << ", index " << i;
      }
    }
  }
}

// MIN/MAX propagate NaN from either side for float32/float64 too; SUM of inf and -inf is NaN.
template <class T>
void checkNativeNan(const KernelTable& t, DataType d) {
  const T nan = std::numeric_limits<T>::quiet_NaN(), inf = std::numeric_limits<T>::infinity();
  struct Case {
    ReduceOp op;
    T a, b;
    bool wantNan;
    T want;
  };
  const Case cases[] = {
      {ReduceOp::kMin, nan, T(1), true, 0},      {ReduceOp::kMin, T(1), nan, true, 0},
      {ReduceOp::kMax, nan, -inf, true, 0},      {ReduceOp::kMax, -inf, nan, true, 0},
      {ReduceOp::kSum, inf, -inf, true, 0},      {ReduceOp::kProd, inf, T(0), true, 0},
      {ReduceOp::kMin, -inf, T(3), false, -inf}, {ReduceOp::kMax, T(-2), T(5), false, T(5)},
  };
  for (const Case& c : cases) {
    std::vector<T> a(kTiled, c.a), b(kTiled, c.b), out(kTiled, T(7));
    t.reduce[int(d)][int(c.op)](out.data(), a.data(), b.data(), kTiled);
    for (size_t i = 0; i < kTiled; ++i) {
      bool ok = c.wantNan ? std::isnan(out[i]) : out[i] == c.want;
      ASSERT_TRUE(ok) << "isa=" << t.name << " dtype=" << toString(d) << " op=" << toString(c.op)
                      << " index=" << i << " a=" << c.a << " b=" << c.b << " got=" << out[i];
    }
  }
}

TEST(ReduceRounding, NativeFloatNanSemantics) {
  for (const KernelTable* t : availableKernels()) {
    checkNativeNan<float>(*t, DataType::kFloat32);
    checkNativeNan<double>(*t, DataType::kFloat64);
  }
}

// Hand-derived quotients: fp16 1/3 = 0x3555, bf16 1/3 = 0x3EAB (0x3EAAAAAB rounded up),
// fp16 3/2 = 1.5 = 0x3E00, fp16 max/7 = 9357.71 -> 9360 = 0x7092, subnormal 0x0003/2 = 1.5 ulp
// -> tie -> 0x0002.
TEST(ReduceRounding, AverageOf16BitTypes) {
  struct Case {
    DataType d;
    uint16_t in;
    int div;
    uint16_t want;
  };
  const Case cases[] = {
      {DataType::kFloat16, 0x3C00, 3, 0x3555},   {DataType::kBFloat16, 0x3F80, 3, 0x3EAB},
      {DataType::kFloat16, 0x4200, 2, 0x3E00},   {DataType::kFloat16, 0x7BFF, 7, 0x7092},
      {DataType::kFloat16, 0x0003, 2, 0x0002},   {DataType::kBFloat16, 0x4040, 1, 0x4040},
      {DataType::kFloat16, 0x7E00, 4, kNanBits}, {DataType::kBFloat16, 0xFF80, 5, 0xFF80},
  };
  for (const KernelTable* t : availableKernels()) {
    for (const Case& c : cases) {
      std::vector<uint16_t> buf(kTiled, c.in);
      t->average[int(c.d)](buf.data(), kTiled, c.div);
      for (size_t i = 0; i < kTiled; ++i) {
        bool ok = c.want == kNanBits ? isNan16(c.d, buf[i]) : buf[i] == c.want;
        ASSERT_TRUE(ok) << "isa=" << t->name << " dtype=" << toString(c.d) << " in=0x" << std::hex
                        << c.in << " / " << std::dec << c.div << " index=" << i << " got=0x"
                        << std::hex << buf[i] << " want=0x" << c.want;
      }
    }
  }
}

// Random data against the reference: round(x / divisor) for every floating type, several
// counts (tails) and divisors, on every table.
TEST(ReduceRounding, AverageRandomAgainstReference) {
  std::mt19937_64 rng(99);
  for (const KernelTable* t : availableKernels()) {
    for (DataType d : testing::allDataTypes()) {
      if (!isFloatingPoint(d)) continue;
      for (size_t count : {1, 17, 64, 65, 1000}) {
        for (int div : {1, 3, 7, 16}) {
          size_t sz = dataTypeSize(d);
          std::vector<uint8_t> buf(count * sz), want(count * sz);
          testing::fillRandom(d, buf.data(), count, rng);
          for (size_t i = 0; i < count; ++i)
            testing::storeFloat(d, want.data(), i, testing::loadFloat(d, buf.data(), i) / div);
          t->average[int(d)](buf.data(), count, div);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_TRUE(testing::sameElement(d, ReduceOp::kAvg, buf.data(), want.data(), i))
                << "isa=" << t->name << " dtype=" << toString(d) << " count=" << count
                << " divisor=" << div << " index=" << i
                << " got=" << testing::loadFloat(d, buf.data(), i)
                << " want=" << testing::loadFloat(d, want.data(), i);
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace smddp::reduce
