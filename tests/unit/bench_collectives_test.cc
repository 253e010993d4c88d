// SPDX-License-Identifier: Apache-2.0
// Unit tests of the per-collective descriptions: busbw factors, per-rank counts (rounded down as
// nccl-tests does), in-place offsets and closed-form expected values.
#include <gtest/gtest.h>

#include <algorithm>

#include "collective.h"
#include "verify.h"

namespace smddp::bench {
namespace {

TEST(BenchCollectives, BusBandwidthFactors) {
  const int ranks[] = {1, 2, 4, 8};
  const double allReduce[] = {0.0, 1.0, 1.5, 1.75};
  const double allGather[] = {0.0, 0.5, 0.75, 0.875};
  for (int k = 0; k < 4; ++k) {
    EXPECT_DOUBLE_EQ(allReduceSpec().busBwFactor(ranks[k]), allReduce[k]) << ranks[k];
    EXPECT_DOUBLE_EQ(allGatherSpec().busBwFactor(ranks[k]), allGather[k]) << ranks[k];
    EXPECT_DOUBLE_EQ(broadcastSpec().busBwFactor(ranks[k]), 1.0) << ranks[k];
    EXPECT_DOUBLE_EQ(barrierSpec().busBwFactor(ranks[k]), 0.0) << ranks[k];
    EXPECT_DOUBLE_EQ(reduceScatterSpec().busBwFactor(ranks[k]), allGather[k]) << ranks[k];
  }
}

TEST(BenchCollectives, ReduceScatterCountsAndExpectedValues) {
  const CollectiveSpec& rs = reduceScatterSpec();
  // Per-rank count = size / (n * elemsize); the row's size is the whole send buffer.
  EXPECT_EQ(rs.countFor(100, 4, 3), 8u);
  EXPECT_EQ(rs.sendCount(8, 3), 24u);
  EXPECT_EQ(rs.recvCount(8, 3), 8u);
  EXPECT_EQ(rs.inPlaceOffset(8, 3, 2), 16u);  // in place: recv is block 2 of send
  EXPECT_TRUE(rs.outputInInput);
  EXPECT_FALSE(allGatherSpec().outputInInput);
  EXPECT_TRUE(rs.usesOp);
  CaseParams p;
  p.op = ReduceOp::kMax;
  p.nranks = 3;
  p.count = 5;
  for (int rank = 0; rank < 3; ++rank) {
    p.rank = rank;
    for (size_t i = 0; i < p.count; ++i) {
      double want = -1e300;
      for (int r = 0; r < 3; ++r) {
        CaseParams q = p;
        q.rank = r;
        want = std::max(want, rs.input(q, static_cast<size_t>(rank) * p.count + i));
      }
      EXPECT_EQ(rs.expected(p, i), want) << "rank " << rank << " index " << i;
    }
  }
}

TEST(BenchCollectives, AllToAllCountsAndExpectedValues) {
  const CollectiveSpec& a = allToAllSpec();
  EXPECT_EQ(a.countFor(100, 4, 3), 8u);  // per peer; the row's size is the whole send buffer
  EXPECT_EQ(a.sendCount(8, 3), 24u);
  EXPECT_EQ(a.recvCount(8, 3), 24u);
  EXPECT_FALSE(a.hasInPlace);
  EXPECT_TRUE(allGatherSpec().hasInPlace);
  EXPECT_DOUBLE_EQ(a.busBwFactor(4), 0.75);
  // Block s of rank r's output is block r of rank s's input.
  CaseParams p;
  p.nranks = 3;
  p.count = 4;
  for (int rank = 0; rank < 3; ++rank) {
    p.rank = rank;
    for (size_t i = 0; i < 12; ++i) {
      CaseParams source = p;
      source.rank = static_cast<int>(i / 4);
      EXPECT_EQ(a.expected(p, i), a.input(source, static_cast<size_t>(rank) * 4 + i % 4))
          << "rank " << rank << " index " << i;
    }
  }
}

TEST(BenchCollectives, RootedCollectivesCountsAndExpectedValues) {
  EXPECT_EQ(gatherSpec().countFor(100, 4, 3), 8u);  // per rank; the row is the whole output
  EXPECT_EQ(gatherSpec().recvCount(8, 3), 24u);
  EXPECT_EQ(scatterSpec().sendCount(8, 3), 24u);
  EXPECT_EQ(reduceSpec().countFor(100, 4, 3), 25u);
  EXPECT_TRUE(reduceSpec().outputOnRootOnly && gatherSpec().outputOnRootOnly);
  EXPECT_FALSE(scatterSpec().outputOnRootOnly);
  EXPECT_TRUE(scatterSpec().outputInInput);
  EXPECT_DOUBLE_EQ(reduceSpec().busBwFactor(4), 1.0);
  EXPECT_DOUBLE_EQ(gatherSpec().busBwFactor(4), 0.75);
  CaseParams p;
  p.nranks = 3;
  p.count = 4;
  p.root = 1;
  p.op = ReduceOp::kSum;
  for (int rank = 0; rank < 3; ++rank) {
    p.rank = rank;
    for (size_t i = 0; i < 12; ++i) {  // gather: block s of the root's output is rank s's input
      CaseParams source = p;
      source.rank = static_cast<int>(i / 4);
      EXPECT_EQ(gatherSpec().expected(p, i), gatherSpec().input(source, i % 4)) << i;
    }
    for (size_t i = 0; i < 4; ++i) {  // scatter: block `rank` of the root's input
      CaseParams root = p;
      root.rank = 1;
      EXPECT_EQ(scatterSpec().expected(p, i), scatterSpec().input(root, 4 * rank + i)) << i;
      double sum = 0;
      for (int r = 0; r < 3; ++r) {
        CaseParams q = p;
        q.rank = r;
        sum += reduceSpec().input(q, i);
      }
      EXPECT_EQ(reduceSpec().expected(p, i), sum) << i;
    }
  }
}

TEST(BenchCollectives, CountsRoundDown) {
  EXPECT_EQ(allReduceSpec().countFor(10, 4, 3), 2u);
  EXPECT_EQ(allReduceSpec().recvCount(2, 3), 2u);
  EXPECT_EQ(broadcastSpec().countFor(7, 2, 5), 3u);
  // all_gather: per-rank count = size / (n * elemsize); the row's size is the whole recv buffer.
  EXPECT_EQ(allGatherSpec().countFor(100, 4, 3), 8u);
  EXPECT_EQ(allGatherSpec().sendCount(8, 3), 8u);
  EXPECT_EQ(allGatherSpec().recvCount(8, 3), 24u);
  EXPECT_EQ(allGatherSpec().countFor(8, 4, 3), 0u);  // a count-0 row
  EXPECT_EQ(allGatherSpec().inPlaceOffset(8, 3, 2), 16u);
  EXPECT_EQ(allReduceSpec().inPlaceOffset(8, 3, 2), 0u);
  EXPECT_FALSE(barrierSpec().movesData);
  EXPECT_TRUE(allReduceSpec().usesOp);
  EXPECT_TRUE(broadcastSpec().usesRoot);
}

TEST(BenchCollectives, ExpectedValues) {
  CaseParams p;
  p.nranks = 3;
  p.count = 5;
  p.root = 2;
  for (size_t i = 0; i < 15; ++i) {
    EXPECT_EQ(allGatherSpec().expected(p, i), dataInput(static_cast<int>(i / 5), i % 5)) << i;
    EXPECT_EQ(broadcastSpec().expected(p, i), dataInput(2, i)) << i;
  }
  p.rank = 1;
  EXPECT_EQ(allGatherSpec().input(p, 3), dataInput(1, 3));
  EXPECT_EQ(broadcastSpec().input(p, 3), dataInput(1, 3));
  // all_reduce of three ranks: the op applied to each rank's input.
  p.op = ReduceOp::kMax;
  p.dtype = DataType::kInt32;
  for (size_t i = 0; i < 50; ++i) {
    double want = -1e9;
    for (int r = 0; r < 3; ++r) {
      p.rank = r;
      want = std::max(want, allReduceSpec().input(p, i));
    }
    EXPECT_EQ(allReduceSpec().expected(p, i), want) << i;
  }
}

}  // namespace
}  // namespace smddp::bench
