// SPDX-License-Identifier: Apache-2.0
// The public reducer API (reduce/reducer.h): the supported-pair table, the errors for unsupported
// pairs and bad divisors (code and message naming dtype and op), dispatch (isaName, forceIsa), and
// one exact end-to-end reduce + finishAverage through the public entry points on every ISA.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reduce/kernel_table.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

TEST(ReduceApi, SupportedPairs) {
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      bool want = ReduceOp(o) != ReduceOp::kAvg || isFloatingPoint(DataType(d));
      EXPECT_EQ(supported(DataType(d), ReduceOp(o)), want)
          << "dtype=" << toString(DataType(d)) << " op=" << toString(ReduceOp(o));
    }
  }
}

TEST(ReduceApi, UnsupportedPairThrowsNamingDtypeAndOp) {
  for (DataType d : {DataType::kInt8, DataType::kUInt8, DataType::kInt32, DataType::kInt64}) {
    int32_t x[4] = {1, 2, 3, 4};
    try {
      reduce(d, ReduceOp::kAvg, x, x, x, 1);
      ADD_FAILURE() << "no error for dtype=" << toString(d) << " op=avg";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << toString(d);
      std::string msg = e.what();
      EXPECT_NE(msg.find(toString(d)), std::string::npos) << msg;
      EXPECT_NE(msg.find("avg"), std::string::npos) << msg;
      EXPECT_TRUE(e.recoverable());
    }
    EXPECT_EQ(x[0], 1) << "an unsupported call must not touch the buffers";
  }
}

TEST(ReduceApi, FinishAverageRejectsIntegersAndBadDivisors) {
  for (DataType d : {DataType::kInt8, DataType::kUInt8, DataType::kInt32, DataType::kInt64}) {
    int64_t x = 6;
    try {
      finishAverage(d, &x, 1, 2);
      ADD_FAILURE() << "no error for dtype=" << toString(d);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
      EXPECT_NE(std::string(e.what()).find(toString(d)), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("avg"), std::string::npos) << e.what();
    }
    EXPECT_EQ(x, 6);
  }
  float f = 1;
  for (int div : {0, -3}) {
    try {
      finishAverage(DataType::kFloat32, &f, 1, div);
      ADD_FAILURE() << "no error for divisor " << div;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::to_string(div)), std::string::npos) << e.what();
    }
  }
}

TEST(ReduceApi, ZeroCountTouchesNothing) {
  reduce(DataType::kFloat32, ReduceOp::kSum, nullptr, nullptr, nullptr, 0);
  finishAverage(DataType::kBFloat16, nullptr, 0, 3);
}

TEST(ReduceApi, DispatchPicksBestAndForceIsaSwitches) {
  std::vector<const KernelTable*> tables = availableKernels();
  ASSERT_FALSE(tables.empty());
  EXPECT_STREQ(isaName(), tables.front()->name);
  EXPECT_STREQ(tables.back()->name, "baseline");
  for (const KernelTable* t : tables) {
    forceIsa(t->name);
    EXPECT_STREQ(isaName(), t->name);
    // AVG of {1.5, -2, 3e5} and {2.5, 7, 1} over 2 ranks: (a+b)/2, exact in float32.
    float a[3] = {1.5f, -2.0f, 3e5f}, b[3] = {2.5f, 7.0f, 1.0f};
    reduce(DataType::kFloat32, ReduceOp::kAvg, a, a, b, 3);
    finishAverage(DataType::kFloat32, a, 3, 2);
    EXPECT_EQ(a[0], 2.0f) << t->name;
    EXPECT_EQ(a[1], 2.5f) << t->name;
    EXPECT_EQ(a[2], 150000.5f) << t->name;
    // int8 PROD wraps: 100 * 3 = 300 = 44 mod 256; -128 * -1 = 128 -> -128.
    int8_t x[2] = {100, -128}, y[2] = {3, -1}, z[2] = {0, 0};
    reduce(DataType::kInt8, ReduceOp::kProd, z, x, y, 2);
    EXPECT_EQ(z[0], 44) << t->name;
    EXPECT_EQ(z[1], -128) << t->name;
  }
  forceIsa(nullptr);
  EXPECT_STREQ(isaName(), tables.front()->name);
  try {
    forceIsa("sse9");
    ADD_FAILURE() << "forceIsa accepted an unknown ISA";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("sse9"), std::string::npos);
  }
  EXPECT_STREQ(isaName(), tables.front()->name) << "a failed forceIsa must not change the choice";
}

}  // namespace
}  // namespace smddp::reduce
