// SPDX-License-Identifier: Apache-2.0
// Unit tests of the perf tools' verifier and input patterns: a planted wrong element is counted,
// and the expected values are exact in every dtype for every op and rank count.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "element.h"
#include "verify.h"

namespace smddp::bench {
namespace {

const DataType kAllTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                              DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                              DataType::kInt32,    DataType::kInt64};
const ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                            ReduceOp::kAvg};

// A buffer holding the exact expected all_reduce result.
std::vector<char> expectedBuffer(DataType dtype, ReduceOp op, int nranks, size_t count) {
  std::vector<char> buf(count * dataTypeSize(dtype));
  for (size_t i = 0; i < count; ++i) {
    storeElement(dtype, buf.data(), i, reductionExpected(dtype, op, nranks, i));
  }
  return buf;
}

TEST(BenchVerify, CountsAPlantedWrongElement) {
  for (DataType dtype : kAllTypes) {
    std::vector<char> buf = expectedBuffer(dtype, ReduceOp::kSum, 4, 1000);
    ASSERT_EQ(countWrongReduction(dtype, ReduceOp::kSum, 4, buf.data(), 1000), 0)
        << toString(dtype);
    const double right = reductionExpected(dtype, ReduceOp::kSum, 4, 517);
    storeElement(dtype, buf.data(), 517, right + 1);
    EXPECT_EQ(countWrongReduction(dtype, ReduceOp::kSum, 4, buf.data(), 1000), 1)
        << toString(dtype);
    storeElement(dtype, buf.data(), 999, poisonValue(dtype));
    EXPECT_EQ(countWrongReduction(dtype, ReduceOp::kSum, 4, buf.data(), 1000), 2)
        << toString(dtype);
  }
}

TEST(BenchVerify, AverageToleranceIsAFewUlps) {
  std::vector<char> buf = expectedBuffer(DataType::kFloat32, ReduceOp::kAvg, 3, 64);
  const double want = reductionExpected(DataType::kFloat32, ReduceOp::kAvg, 3, 10);
  storeElement(DataType::kFloat32, buf.data(), 10, std::nextafter(static_cast<float>(want), 9.f));
  EXPECT_EQ(countWrongReduction(DataType::kFloat32, ReduceOp::kAvg, 3, buf.data(), 64), 0);
  storeElement(DataType::kFloat32, buf.data(), 10, want + 1e-3);
  EXPECT_EQ(countWrongReduction(DataType::kFloat32, ReduceOp::kAvg, 3, buf.data(), 64), 1);
  // The sum (not divided by the rank count) is wrong everywhere it is not 0.
  std::vector<char> sum = expectedBuffer(DataType::kFloat32, ReduceOp::kSum, 3, 64);
  int64_t nonzero = 0;
  for (size_t i = 0; i < 64; ++i) nonzero += loadElement(DataType::kFloat32, sum.data(), i) != 0;
  EXPECT_GT(nonzero, 0);
  EXPECT_EQ(countWrongReduction(DataType::kFloat32, ReduceOp::kAvg, 3, sum.data(), 64), nonzero);
}

TEST(BenchVerify, InputsAndResultsAreExactInEveryDtype) {
  for (DataType dtype : kAllTypes) {
    for (ReduceOp op : kAllOps) {
      if (op == ReduceOp::kAvg && !isFloatingPoint(dtype)) continue;
      for (int n : {1, 2, 3, 4, 7, 8, 16, 64, 100, 300}) {
        for (size_t i = 0; i < 200; ++i) {
          double v[1];
          const double want = reductionExpected(dtype, op, n, i);
          storeElement(dtype, v, 0, want);
          ASSERT_LE(std::fabs(loadElement(dtype, v, 0) - want), tolerance(dtype, op, want))
              << toString(dtype) << " " << toString(op) << " n=" << n << " i=" << i;
          const double in = reductionInput(dtype, op, n, i % n, i);
          storeElement(dtype, v, 0, in);
          ASSERT_EQ(loadElement(dtype, v, 0), in);
        }
      }
    }
  }
}

TEST(BenchVerify, PatternsDependOnRankAndIndex) {
  // A collective that copied the wrong rank's block or shifted indices must be caught.
  int differ = 0;
  for (size_t i = 0; i < 100; ++i) differ += dataInput(0, i) != dataInput(1, i);
  EXPECT_GT(differ, 90);
  differ = 0;
  for (size_t i = 0; i < 100; ++i) {
    differ += reductionExpected(DataType::kFloat32, ReduceOp::kSum, 2, i) !=
              reductionExpected(DataType::kFloat32, ReduceOp::kSum, 2, i + 1);
  }
  EXPECT_GT(differ, 50);
  // Closed form for two ranks: the expected sum is the sum of both inputs.
  EXPECT_EQ(reductionExpected(DataType::kInt32, ReduceOp::kSum, 2, 42),
            reductionInput(DataType::kInt32, ReduceOp::kSum, 2, 0, 42) +
                reductionInput(DataType::kInt32, ReduceOp::kSum, 2, 1, 42));
  // Products are powers of two within int8.
  for (size_t i = 0; i < 100; ++i) {
    const double p = reductionExpected(DataType::kInt8, ReduceOp::kProd, 16, i);
    EXPECT_EQ(p, std::exp2(std::round(std::log2(p))));
    EXPECT_LE(p, 64);
  }
}

TEST(BenchVerify, GuardDamageIsCounted) {
  unsigned char guard[kGuardBytes];
  fillGuard(guard);
  EXPECT_EQ(countGuardDamage(guard), 0);
  guard[0] = 0;
  guard[kGuardBytes - 1] = 1;
  EXPECT_EQ(countGuardDamage(guard), 2);
}

TEST(BenchElement, HalfAndBFloat16Conversions) {
  EXPECT_EQ(floatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(floatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(floatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(floatToHalf(65520.0f), 0x7C00);            // rounds up to infinity
  EXPECT_EQ(halfToFloat(floatToHalf(2049.0f)), 2048);  // tie to even
  EXPECT_EQ(halfToFloat(floatToHalf(2051.0f)), 2052);
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));
  EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(NAN))));
  EXPECT_EQ(floatToBFloat16(1.0f), 0x3F80);
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(257.0f)), 256);  // tie to even
  EXPECT_EQ(bfloat16ToFloat(floatToBFloat16(259.0f)), 260);
  for (int v = -2048; v <= 2048; ++v) {
    ASSERT_EQ(halfToFloat(floatToHalf(static_cast<float>(v))), v);
    if (std::abs(v) <= 256) {
      ASSERT_EQ(bfloat16ToFloat(floatToBFloat16(static_cast<float>(v))), v);
    }
  }
}

}  // namespace
}  // namespace smddp::bench
