// SPDX-License-Identifier: Apache-2.0
// The portable float16/bfloat16 conversions the baseline kernels use (src/reduce/convert.h),
// checked exhaustively at every rounding boundary: for each pair of adjacent finite values, the
// midpoint must round to the one with the even mantissa and the floats just either side of it to
// the nearer one; plus every 16-bit pattern must widen to the value the independent decoder gives.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "reduce/convert.h"
#include "reduce_test_util.h"

namespace smddp::reduce {
namespace {

using testing::decode16;
using testing::encode16;
using testing::Format;

// `narrow` is the conversion under test; `top` the largest finite positive pattern.
template <class Narrow>
void checkBoundaries(Format f, uint16_t top, uint16_t inf, Narrow narrow, const char* name) {
  for (uint32_t h = 0; h <= top; ++h) {
    uint16_t lo = uint16_t(h), hi = uint16_t(h + 1);  // hi == inf for the last one
    double mid = (decode16(lo, f) +
                  (hi == inf ? std::ldexp(1.0, (1 << f.expBits) - 1 - f.bias) : decode16(hi, f))) /
                 2;
    float m = float(mid);
    ASSERT_EQ(double(m), mid) << name << ": midpoint not exact at 0x" << std::hex << h;
    uint16_t even = (lo & 1) ? hi : lo;
    for (uint16_t sign : {uint16_t(0), uint16_t(0x8000)}) {
      float s = sign ? -1.0f : 1.0f;
      float below = std::nextafter(m, 0.0f), above = std::nextafter(m, 2 * m + 1);
      ASSERT_EQ(narrow(s * m), sign | even) << name << " tie above 0x" << std::hex << h;
      ASSERT_EQ(narrow(s * below), sign | lo) << name << " below tie above 0x" << std::hex << h;
      ASSERT_EQ(narrow(s * above), sign | hi) << name << " above tie above 0x" << std::hex << h;
      // The test's own reference must agree, so the other tests can trust it.
      ASSERT_EQ(encode16(s * m, f), sign | even) << name << " reference at 0x" << std::hex << h;
      ASSERT_EQ(encode16(s * above, f), sign | hi) << name << " reference at 0x" << std::hex << h;
    }
  }
}

TEST(ReduceConvert, HalfRoundingBoundaries) {
  checkBoundaries(testing::kHalf, 0x7BFF, 0x7C00, floatToHalf, "float16");
}

TEST(ReduceConvert, BFloat16RoundingBoundaries) {
  checkBoundaries(testing::kBf16, 0x7F7F, 0x7F80, floatToBf16, "bfloat16");
}

TEST(ReduceConvert, EveryPatternWidensExactly) {
  for (uint32_t h = 0; h <= 0xFFFF; ++h) {
    double wantHalf = decode16(uint16_t(h), testing::kHalf);
    double wantBf16 = decode16(uint16_t(h), testing::kBf16);
    float gotHalf = halfToFloat(uint16_t(h)), gotBf16 = bf16ToFloat(uint16_t(h));
    if (std::isnan(wantHalf)) {
      ASSERT_TRUE(std::isnan(gotHalf)) << "float16 0x" << std::hex << h;
      // NaN survives the round trip as a NaN.
      ASSERT_TRUE(std::isnan(decode16(floatToHalf(gotHalf), testing::kHalf)));
    } else {
      ASSERT_EQ(double(gotHalf), wantHalf) << "float16 0x" << std::hex << h;
      ASSERT_EQ(floatToHalf(gotHalf), h) << "float16 round trip 0x" << std::hex << h;
    }
    if (std::isnan(wantBf16)) {
      ASSERT_TRUE(std::isnan(gotBf16)) << "bfloat16 0x" << std::hex << h;
    } else {
      ASSERT_EQ(double(gotBf16), wantBf16) << "bfloat16 0x" << std::hex << h;
      ASSERT_EQ(floatToBf16(gotBf16), h) << "bfloat16 round trip 0x" << std::hex << h;
    }
  }
}

TEST(ReduceConvert, SpecialValues) {
  const float inf = INFINITY;
  EXPECT_EQ(floatToHalf(inf), 0x7C00);
  EXPECT_EQ(floatToHalf(-inf), 0xFC00);
  EXPECT_EQ(floatToHalf(1e30f), 0x7C00) << "far overflow";
  EXPECT_EQ(floatToHalf(1e-30f), 0x0000) << "far underflow";
  EXPECT_EQ(floatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(floatToBf16(inf), 0x7F80);
  EXPECT_EQ(floatToBf16(3.4028235e38f), 0x7F80) << "float max rounds to bf16 inf";
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000);
  // A float NaN whose payload would carry into the exponent under plain rounding stays NaN.
  for (uint32_t bits : {0x7FFFFFFFu, 0xFFFFFFFFu, 0x7F800001u, 0x7FBFFFFFu}) {
    float nan = bitsFloat(bits);
    EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(nan)))) << "bf16 of 0x" << std::hex << bits;
    EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(nan)))) << "fp16 of 0x" << std::hex << bits;
  }
}

}  // namespace
}  // namespace smddp::reduce
