// SPDX-License-Identifier: Apache-2.0
// The CUDA launch planner (src/reduce/cuda/launch_plan.h), exhaustively on the CPU: every start
// alignment 0..15 of every operand size, many counts, shared and mixed misalignments. The kernels'
// two grid-stride loops are replayed here over the plan, so "every element written exactly once"
// is checked on the very index arithmetic the kernels use.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "reduce/cuda/launch_plan.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

constexpr size_t kElemSizes[] = {1, 2, 4, 8};
constexpr size_t kCounts[] = {0,  1,  2,  3,   7,   8,   15,  16,   17,   31,   32,   33,
                              63, 64, 65, 100, 255, 256, 257, 1000, 2047, 2048, 2049, 4099};
constexpr uintptr_t kBase = 0x7f0000001000;  // 4 KiB aligned, like a cudaMalloc block

// Replays reduceKernel's loops: vectors with kCudaUnroll per thread iteration, then edges.
std::vector<int> replay(const LaunchPlan& p) {
  std::vector<int> hits(p.count, 0);
  size_t threads = size_t(p.grid) * p.block, stride = threads;
  for (size_t t = 0; t < threads; ++t) {
    for (size_t base = t; base < p.bodyVectors; base += stride * kCudaUnroll) {
      for (size_t u = 0; u < kCudaUnroll; ++u) {
        size_t v = base + u * stride;
        if (v >= p.bodyVectors) break;
        for (size_t l = 0; l < p.lanes; ++l) ++hits[p.head + v * p.lanes + l];
      }
    }
    for (size_t j = t; j < p.edgeCount(); j += stride) {
      ++hits[j < p.head ? j : p.tailStart + (j - p.head)];
    }
  }
  return hits;
}

std::string describe(size_t es, size_t count, uintptr_t d, uintptr_t a, uintptr_t b, int sms) {
  return "elemSize=" + std::to_string(es) + " count=" + std::to_string(count) +
         " misalign(dst,a,b)=" + std::to_string(d % 16) + "," + std::to_string(a % 16) + "," +
         std::to_string(b % 16) + " sms=" + std::to_string(sms);
}

void checkPlan(size_t es, size_t count, const uintptr_t addrs[3], int sms) {
  const std::string what = describe(es, count, addrs[0], addrs[1], addrs[2], sms);
  LaunchPlan p = planLaunch(addrs, 3, count, es, sms);
  ASSERT_TRUE(p.elementAligned) << what;
  ASSERT_EQ(p.lanes, 16 / es) << what;
  ASSERT_LE(p.head, count) << what;
  ASSERT_EQ(p.tailStart, p.head + p.bodyVectors * p.lanes) << what;
  ASSERT_LE(p.tailStart, count) << what;
  bool shared = addrs[0] % 16 == addrs[1] % 16 && addrs[1] % 16 == addrs[2] % 16;
  if (p.vectorized()) {
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ((addrs[i] + p.head * es) % 16, 0u) << what;
    }
  }
  if (shared) {
    // Maximal body: the head never exceeds one vector and the tail is shorter than one.
    ASSERT_LT(p.head, p.lanes) << what;
    ASSERT_LT(count - p.tailStart, p.lanes) << what;
  } else {
    ASSERT_EQ(p.bodyVectors, 0u) << what;
    ASSERT_EQ(p.edgeCount(), count) << what;
  }
  if (count == 0) {
    ASSERT_EQ(p.grid, 0u) << what;
    return;
  }
  ASSERT_EQ(p.block, kCudaBlockThreads) << what;
  ASSERT_GE(p.grid, 1u) << what;
  ASSERT_LE(p.grid, unsigned(sms) * kCudaBlocksPerSm) << what;
  std::vector<int> hits = replay(p);
  for (size_t i = 0; i < count; ++i) ASSERT_EQ(hits[i], 1) << what << " element " << i;
}

TEST(ReduceCudaLaunchPlan, SharedMisalignmentEveryOffsetAndCount) {
  for (size_t es : kElemSizes) {
    for (uintptr_t mis = 0; mis < 16; mis += es) {
      for (size_t count : kCounts) {
        for (int sms : {1, 132}) {
          const uintptr_t addrs[3] = {kBase + mis, kBase + 0x100000 + mis, kBase + 0x200000 + mis};
          checkPlan(es, count, addrs, sms);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(ReduceCudaLaunchPlan, MixedMisalignmentsFallBackToScalar) {
  for (size_t es : kElemSizes) {
    for (uintptr_t md = 0; md < 16; md += es) {
      for (uintptr_t ma = 0; ma < 16; ma += es) {
        for (size_t count : {size_t(1), size_t(33), size_t(1000)}) {
          const uintptr_t addrs[3] = {kBase + md, kBase + 0x100000 + ma, kBase + 0x200000 + ma};
          checkPlan(es, count, addrs, 1);
          if (::testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

TEST(ReduceCudaLaunchPlan, SingleOperandAndExactAliasing) {
  for (uintptr_t mis = 0; mis < 16; mis += 2) {
    const uintptr_t one = kBase + mis;
    LaunchPlan p = planLaunch(&one, 1, 1001, 2, 4);
    EXPECT_EQ((one + p.head * 2) % 16, 0u) << "misalign " << mis;
    EXPECT_EQ(p.head + p.bodyVectors * 8 + (1001 - p.tailStart), 1001u);
    const uintptr_t aliased[3] = {one, one, kBase + 0x40000 + mis};
    EXPECT_EQ(planLaunch(aliased, 3, 1001, 2, 4).bodyVectors, p.bodyVectors);
  }
}

TEST(ReduceCudaLaunchPlan, ElementMisalignedPointerIsFlagged) {
  const uintptr_t addrs[3] = {kBase + 2, kBase + 0x1000, kBase + 0x2000};  // dst off by 2 bytes
  LaunchPlan p = planLaunch(addrs, 3, 100, 4, 8);
  EXPECT_FALSE(p.elementAligned);
  EXPECT_FALSE(p.vectorized());
  EXPECT_TRUE(planLaunch(addrs, 3, 100, 2, 8).elementAligned);
}

TEST(ReduceCudaLaunchPlan, HugeCountsCapTheGrid) {
  const uintptr_t addrs[3] = {kBase, kBase, kBase};
  size_t count = size_t(1) << 40;
  LaunchPlan p = planLaunch(addrs, 3, count, 2, 132);
  EXPECT_EQ(p.grid, 132u * kCudaBlocksPerSm);
  EXPECT_EQ(p.bodyVectors, count / 8);
  EXPECT_EQ(p.tailStart, count);
  // A tiny call gets one block, not a full grid of idle threads.
  EXPECT_EQ(planLaunch(addrs, 3, 5, 4, 132).grid, 1u);
}

TEST(ReduceCudaLaunchPlan, RejectsBadArguments) {
  const uintptr_t addrs[1] = {kBase};
  for (size_t es : {size_t(0), size_t(3), size_t(32)}) {
    try {
      planLaunch(addrs, 1, 10, es, 8);
      ADD_FAILURE() << "elemSize " << es << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find(std::to_string(es)), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(planLaunch(addrs, 0, 10, 4, 8), Error);
  EXPECT_THROW(planLaunch(addrs, 1, 10, 4, 0), Error);
}

}  // namespace
}  // namespace smddp::reduce
