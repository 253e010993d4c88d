// SPDX-License-Identifier: Apache-2.0
// Every CUDA (dtype, op) kernel against the float64 reference of tests/unit/reduce_test_util.h and
// against the CPU reducer, on random non-zero data with NaN and +-inf sprinkled in: lengths 0, 1,
// 7, 15..17 and 1000003; shared and mixed operand misalignments (vector body + scalar edges, and
// the all-scalar fallback); dst aliasing a or b; poisoned outputs and guard bytes that must
// survive. Skips itself when no CUDA device is usable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/reduce_cuda_test_util.h"
#include "reduce/cuda/reducer_cuda.h"
#include "reduce/reducer.h"
#include "unit/reduce_test_util.h"

namespace smddp::reduce {
namespace {

using testing::DeviceRegion;

constexpr size_t kSmallCounts[] = {0, 1, 7, 15, 16, 17, 33, 4099};
constexpr size_t kBigCount = 1000003;

// Element offsets of (dst, a, b) from a 256-byte boundary.
struct Offsets {
  size_t dst, a, b;
};
constexpr Offsets kOffsets[] = {{0, 0, 0}, {1, 1, 1}, {3, 3, 3}, {1, 0, 2}, {0, 5, 5}};

enum class Alias { kNone, kDstIsA, kDstIsB };

struct Case {
  DataType dtype;
  ReduceOp op;
  size_t count;
  Offsets off;
  Alias alias;
  std::string str() const {
    return std::string("dtype=") + toString(dtype) + " op=" + toString(op) +
           " count=" + std::to_string(count) + " offsets(dst,a,b)=" + std::to_string(off.dst) +
           "," + std::to_string(off.a) + "," + std::to_string(off.b) +
           (alias == Alias::kNone     ? ""
            : alias == Alias::kDstIsA ? " dst==a"
                                      : " dst==b");
  }
};

// Random data with specials: NaN in a and b, +inf in b, -inf in a, at sparse distinct indices.
std::vector<uint8_t> makeInput(DataType t, size_t count, uint64_t seed, bool isA) {
  std::vector<uint8_t> v(count * dataTypeSize(t));
  std::mt19937_64 rng(seed);
  testing::fillRandom(t, v.data(), count, rng);
  if (!isFloatingPoint(t)) return v;
  for (size_t i = 0; i < count; ++i) {
    if (isA && i % 101 == 17) testing::storeFloat(t, v.data(), i, NAN);
    if (isA && i % 97 == 13) testing::storeFloat(t, v.data(), i, -INFINITY);
    if (!isA && i % 103 == 29) testing::storeFloat(t, v.data(), i, INFINITY);
    if (!isA && i % 107 == 41) testing::storeFloat(t, v.data(), i, NAN);
  }
  return v;
}

void runCase(const Case& c) {
  const size_t es = dataTypeSize(c.dtype), bytes = c.count * es;
  std::vector<uint8_t> a = makeInput(c.dtype, c.count, 1000 + c.count, true);
  std::vector<uint8_t> b = makeInput(c.dtype, c.count, 2000 + c.count, false);
  std::vector<uint8_t> want(bytes), cpu(bytes);
  for (size_t i = 0; i < c.count; ++i) {
    testing::referenceElement(c.dtype, c.op, a.data(), b.data(), want.data(), i);
  }
  reduce(c.dtype, c.op, cpu.data(), a.data(), b.data(), c.count);

  DeviceRegion da(bytes, c.off.a * es), db(bytes, c.off.b * es), dd(bytes, c.off.dst * es);
  ASSERT_TRUE(da.ok() && db.ok() && dd.ok()) << c.str() << ": cudaMalloc failed";
  SMDDP_ASSERT_CUDA(da.upload(a.data()));
  SMDDP_ASSERT_CUDA(db.upload(b.data()));
  const DeviceRegion& out = c.alias == Alias::kDstIsA ? da : c.alias == Alias::kDstIsB ? db : dd;
  reduceCuda(c.dtype, c.op, out.data(), da.data(), db.data(), c.count, nullptr);
  SMDDP_ASSERT_CUDA(cudaDeviceSynchronize());
  cudaError_t err;
  std::vector<uint8_t> got = out.download(&err);
  SMDDP_ASSERT_CUDA(err);
  ASSERT_EQ(out.firstDamagedGuard(got), -1) << c.str() << ": wrote outside [0, count)";
  const uint8_t* g = got.data() + out.dataStart();
  for (size_t i = 0; i < c.count; ++i) {
    ASSERT_TRUE(testing::sameElement(c.dtype, c.op, g, want.data(), i))
        << c.str() << ": index " << i << " differs from the float64 reference";
    ASSERT_TRUE(testing::sameElement(c.dtype, c.op, g, cpu.data(), i))
        << c.str() << ": index " << i << " differs from the CPU reducer";
  }
}

class ReduceCudaKernels : public ::testing::TestWithParam<DataType> {
 protected:
  void SetUp() override { SMDDP_SKIP_WITHOUT_GPU(); }
};

TEST_P(ReduceCudaKernels, SmallCountsAllOffsetsAndAliasing) {
  for (ReduceOp op : testing::allReduceOps()) {
    if (!supportedCuda(GetParam(), op)) continue;
    for (size_t count : kSmallCounts) {
      for (const Offsets& off : kOffsets) {
        for (Alias alias : {Alias::kNone, Alias::kDstIsA, Alias::kDstIsB}) {
          Offsets o = off;
          if (alias == Alias::kDstIsA) o.dst = o.a;
          if (alias == Alias::kDstIsB) o.dst = o.b;
          runCase({GetParam(), op, count, o, alias});
          if (HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST_P(ReduceCudaKernels, MillionPlusThreeElements) {
  for (ReduceOp op : testing::allReduceOps()) {
    if (!supportedCuda(GetParam(), op)) continue;
    for (const Offsets& off : {kOffsets[0], kOffsets[2], kOffsets[3]}) {
      runCase({GetParam(), op, kBigCount, off, Alias::kNone});
      if (HasFatalFailure()) return;
    }
    runCase({GetParam(), op, kBigCount, {1, 1, 1}, Alias::kDstIsA});
    if (HasFatalFailure()) return;
  }
}

// finishAverageCuda against the host emulation of the CPU rule: divide in float32 (float64 for
// float64) and round once; and against reduce::finishAverage itself.
void runAverage(DataType t, size_t count, size_t offset, int divisor) {
  const std::string what = std::string("dtype=") + toString(t) + " count=" + std::to_string(count) +
                           " offset=" + std::to_string(offset) +
                           " divisor=" + std::to_string(divisor);
  const size_t es = dataTypeSize(t), bytes = count * es;
  std::vector<uint8_t> in = makeInput(t, count, 77 + count, true), want(bytes), cpu = in;
  for (size_t i = 0; i < count; ++i) {
    double x = testing::loadFloat(t, in.data(), i);
    double q = t == DataType::kFloat64 ? x / double(divisor) : double(float(x) / float(divisor));
    testing::storeFloat(t, want.data(), i, q);
  }
  finishAverage(t, cpu.data(), count, divisor);
  DeviceRegion d(bytes, offset * es);
  ASSERT_TRUE(d.ok()) << what;
  SMDDP_ASSERT_CUDA(d.upload(in.data()));
  finishAverageCuda(t, d.data(), count, divisor, nullptr);
  SMDDP_ASSERT_CUDA(cudaDeviceSynchronize());
  cudaError_t err;
  std::vector<uint8_t> got = d.download(&err);
  SMDDP_ASSERT_CUDA(err);
  ASSERT_EQ(d.firstDamagedGuard(got), -1) << what << ": wrote outside [0, count)";
  const uint8_t* g = got.data() + d.dataStart();
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(testing::sameElement(t, ReduceOp::kSum, g, want.data(), i)) << what << " i=" << i;
    ASSERT_TRUE(testing::sameElement(t, ReduceOp::kSum, g, cpu.data(), i)) << what << " i=" << i;
  }
}

TEST_P(ReduceCudaKernels, FinishAverage) {
  if (!isFloatingPoint(GetParam())) GTEST_SKIP() << "avg is for floating dtypes only";
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(17), kBigCount}) {
    for (size_t offset : {0, 1, 3}) {
      for (int divisor : {1, 3, 7, 2049}) {
        runAverage(GetParam(), count, offset, divisor);
        if (HasFatalFailure()) return;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, ReduceCudaKernels, ::testing::ValuesIn(testing::allDataTypes()),
                         [](const ::testing::TestParamInfo<DataType>& info) {
                           return std::string(toString(info.param));
                         });

}  // namespace
}  // namespace smddp::reduce
