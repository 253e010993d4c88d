// SPDX-License-Identifier: Apache-2.0
// The public reducer API (reduce/reducer.h): the supported-pair table, the errors for unsupported
// pairs and bad divisors (code and message naming dtype and op), dispatch (isaName, forceIsa), and
// one exact end-to-end reduce + finishAverage through the public entry points on every ISA.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "reduce/kernel_table.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

// The table spelled out by kind (not through reductionDefined): floating types have no bitwise
// ops, complex only SUM/PROD/AVG, bool no AVG, integers everything.
TEST(ReduceApi, SupportedPairs) {
  using D = DataType;
  const std::vector<D> floating = {D::kFloat32,     D::kFloat64,        D::kFloat16,
                                   D::kBFloat16,    D::kFloat8E4M3FN,   D::kFloat8E4M3FNUZ,
                                   D::kFloat8E5M2,  D::kFloat8E5M2FNUZ, D::kFloat8E8M0FNU};
  const std::vector<D> integral = {D::kInt8,  D::kInt16,  D::kInt32,  D::kInt64,
                                   D::kUInt8, D::kUInt16, D::kUInt32, D::kUInt64};
  auto in = [](const std::vector<D>& v, D d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  ASSERT_EQ(kNumDataTypes, int(floating.size() + integral.size()) + 3);  // + bool, complex x2
  for (int d = 0; d < kNumDataTypes; ++d) {
    for (int o = 0; o < kNumReduceOps; ++o) {
      const ReduceOp op = ReduceOp(o);
      const bool bitwise = op == ReduceOp::kBand || op == ReduceOp::kBor || op == ReduceOp::kBxor;
      bool want;
      if (in(floating, D(d))) want = !bitwise;
      else if (in(integral, D(d))) want = true;
      else if (D(d) == D::kBool) want = op != ReduceOp::kAvg;
      else want = op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kAvg;
      EXPECT_EQ(supported(D(d), op), want)
          << "dtype=" << toString(D(d)) << " op=" << toString(op);
    }
  }
  EXPECT_FALSE(supported(D(kNumDataTypes), ReduceOp::kSum));
  EXPECT_FALSE(supported(D::kInt8, ReduceOp(kNumReduceOps)));
}

TEST(ReduceApi, UnsupportedPairThrowsNamingDtypeOpAndWhy) {
  struct Case {
    DataType dtype;
    ReduceOp op;
    const char* why;
  };
  for (const Case& c : {Case{DataType::kComplex64, ReduceOp::kMax, "no order"},
                        Case{DataType::kComplex128, ReduceOp::kBxor, "no order"},
                        Case{DataType::kFloat32, ReduceOp::kBand, "integer or bool"},
                        Case{DataType::kFloat8E5M2, ReduceOp::kBor, "integer or bool"},
                        Case{DataType::kBool, ReduceOp::kAvg, "bool"}}) {
    int32_t x[4] = {1, 2, 3, 4};
    try {
      reduce(c.dtype, c.op, x, x, x, 1);
      ADD_FAILURE() << "no error for dtype=" << toString(c.dtype) << " op=" << toString(c.op);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << toString(c.dtype);
      std::string msg = e.what();
      EXPECT_NE(msg.find(toString(c.dtype)), std::string::npos) << msg;
      EXPECT_NE(msg.find(toString(c.op)), std::string::npos) << msg;
      EXPECT_NE(msg.find(c.why), std::string::npos) << msg;
      EXPECT_TRUE(e.recoverable());
    }
    EXPECT_EQ(x[0], 1) << "an unsupported call must not touch the buffers";
  }
}

// Integers average in 64 bits and truncate toward zero; complex divides each part.
TEST(ReduceApi, FinishAverageIntegersComplexAndBadDivisors) {
  int32_t i32[4] = {7, -7, 6, -1};
  finishAverage(DataType::kInt32, i32, 4, 2);
  EXPECT_EQ(std::vector<int32_t>(i32, i32 + 4), (std::vector<int32_t>{3, -3, 3, 0}));
  int8_t i8[2] = {-100, 127};
  finishAverage(DataType::kInt8, i8, 2, 200);  // a divisor beyond int8's range
  EXPECT_EQ(i8[0], 0);
  EXPECT_EQ(i8[1], 0);
  uint64_t u64[1] = {~uint64_t(0)};
  finishAverage(DataType::kUInt64, u64, 1, 3);
  EXPECT_EQ(u64[0], ~uint64_t(0) / 3);
  float c64[2] = {3.0f, -5.0f};
  finishAverage(DataType::kComplex64, c64, 1, 2);
  EXPECT_EQ(c64[0], 1.5f);
  EXPECT_EQ(c64[1], -2.5f);
  uint8_t b = 1;
  try {
    finishAverage(DataType::kBool, &b, 1, 2);
    ADD_FAILURE() << "bool averaged";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("bool"), std::string::npos) << e.what();
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

// Closed forms for the types beyond the first eight, on every ISA.
TEST(ReduceApi, NewDtypesClosedForms) {
  for (const KernelTable* t : availableKernels()) {
    forceIsa(t->name);
    float c[2] = {1, 2}, d[2] = {3, 4}, out[2];
    reduce(DataType::kComplex64, ReduceOp::kProd, out, c, d, 1);  // (1+2i)(3+4i) = -5+10i
    EXPECT_EQ(out[0], -5.0f) << t->name;
    EXPECT_EQ(out[1], 10.0f) << t->name;
    uint8_t p[4] = {0, 1, 0, 1}, q[4] = {0, 0, 1, 1}, r[4];
    reduce(DataType::kBool, ReduceOp::kSum, r, p, q, 4);
    EXPECT_EQ(std::vector<uint8_t>(r, r + 4), (std::vector<uint8_t>{0, 1, 1, 1})) << t->name;
    reduce(DataType::kBool, ReduceOp::kBxor, r, p, q, 4);
    EXPECT_EQ(std::vector<uint8_t>(r, r + 4), (std::vector<uint8_t>{0, 1, 1, 0})) << t->name;
    uint64_t big[2] = {~uint64_t(0), 5}, small[2] = {1, 6}, u[2];
    reduce(DataType::kUInt64, ReduceOp::kMax, u, big, small, 2);  // unsigned order
    EXPECT_EQ(u[0], ~uint64_t(0)) << t->name;
    EXPECT_EQ(u[1], 6u) << t->name;
    reduce(DataType::kUInt64, ReduceOp::kBand, u, big, small, 2);
    EXPECT_EQ(u[0], 1u) << t->name;
    EXPECT_EQ(u[1], 4u) << t->name;
    int16_t h[1] = {30000}, k[1] = {30000}, hs[1];
    reduce(DataType::kInt16, ReduceOp::kSum, hs, h, k, 1);  // wraps
    EXPECT_EQ(hs[0], int16_t(-5536)) << t->name;
    // float8: e4m3fn 448 + 448 saturates to 448 (0x7E); e5m2 57344 + 57344 overflows to inf
    // (0x7C); e4m3fnuz 240 + 240 is NaN (0x80); e8m0fnu 2^3 + 2^3 = 2^4 (127 + 4 = 0x83);
    // e4m3fn 1 + 2^-3 = 1.125 (0x39) and 1 + 2^-4 ties to even 1 (0x38).
    uint8_t a8[2] = {0x7E, 0x38}, b8[2] = {0x7E, 0x20}, o8[2];
    reduce(DataType::kFloat8E4M3FN, ReduceOp::kSum, o8, a8, b8, 2);
    EXPECT_EQ(o8[0], 0x7E) << t->name;
    EXPECT_EQ(o8[1], 0x39) << t->name;
    uint8_t tie[1] = {0x18};  // 2^-4 in e4m3fn: exponent 3, mantissa 0
    reduce(DataType::kFloat8E4M3FN, ReduceOp::kSum, o8, a8 + 1, tie, 1);
    EXPECT_EQ(o8[0], 0x38) << t->name;
    uint8_t e5[1] = {0x7B};
    reduce(DataType::kFloat8E5M2, ReduceOp::kSum, o8, e5, e5, 1);
    EXPECT_EQ(o8[0], 0x7C) << t->name;
    uint8_t fz[1] = {0x7F};
    reduce(DataType::kFloat8E4M3FNUZ, ReduceOp::kSum, o8, fz, fz, 1);
    EXPECT_EQ(o8[0], 0x80) << t->name;
    // a NaN keeps its sign through the float32 arithmetic, as torch's widening keeps it:
    // e4m3fn -NaN (0xFF) + 1 is 0xFF, e5m2 -NaN (0xFF) x 1 is 0xFF; the fnuz NaN stays 0x80
    uint8_t nan8[1] = {0xFF}, one8[1] = {0x38}, e5one[1] = {0x3C};
    reduce(DataType::kFloat8E4M3FN, ReduceOp::kSum, o8, nan8, one8, 1);
    EXPECT_EQ(o8[0], 0xFF) << t->name;
    reduce(DataType::kFloat8E5M2, ReduceOp::kProd, o8, nan8, e5one, 1);
    EXPECT_EQ(o8[0], 0xFF) << t->name;
    uint8_t fnuzNan[1] = {0x80}, fnuzOne[1] = {0x40};
    reduce(DataType::kFloat8E4M3FNUZ, ReduceOp::kSum, o8, fnuzNan, fnuzOne, 1);
    EXPECT_EQ(o8[0], 0x80) << t->name;
    uint8_t e8[1] = {127 + 3};
    reduce(DataType::kFloat8E8M0FNU, ReduceOp::kSum, o8, e8, e8, 1);
    EXPECT_EQ(o8[0], 127 + 4) << t->name;
  }
  forceIsa(nullptr);
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
