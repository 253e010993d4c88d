// SPDX-License-Identifier: Apache-2.0
// Hosts with different numbers of ranks (3 + 2 + 1, 1 + 2, 2 + 1 + 4; consecutive and
// interleaved ranks): the leader forms that run there over thread-ranks with a heap arena per
// host (runRanksOnUnevenHosts) — all_reduce hier_leader (the closed-form matrix of every dtype and
// op, many chunks, the cross ring with 1 MiB slots), broadcast, all_gather and reduce_scatter
// hier_leader (every root, dtype and op, the leaders' ring of differently sized blocks with tiny
// and large segments), reduce, gather and scatter hier (every root: the root and the other
// hosts' leaders carry) and barrier hier (no rank leaves before every rank arrived); all_to_all
// hier_leader in algorithms_all_to_all_test.cc.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "algorithms_rooted_checks.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

const std::vector<std::vector<int>>& layouts() {
  static const std::vector<std::vector<int>> all = {
      {0, 0, 0, 1, 1, 2},     // 3 + 2 + 1, consecutive
      {0, 1, 0, 2, 1, 0},     // 3 + 2 + 1, interleaved
      {0, 1, 1},              // 1 + 2
      {0, 0, 1, 2, 2, 2, 2},  // 2 + 1 + 4
  };
  return all;
}

std::string describe(const std::vector<int>& hostOf) {
  std::string s;
  for (int h : hostOf) s += std::to_string(h);
  return "hosts of ranks " + s;
}

TEST(UnevenHosts, AllReduceHierLeaderMatrix) {
  const Algorithm& a = algorithm(K::kAllReduce, "hier_leader");
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    const std::vector<AllReduceCase> cases = allReduceCases(static_cast<int>(hostOf.size()));
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (const AllReduceCase& c : cases) checkAllReduce(ctx, a, c);
    });
  }
}

// Many chunks of 4 KiB slots with an odd count; and 1 MiB slots, where the leaders' step is the
// segmented ring.
TEST(UnevenHosts, AllReduceHierLeaderManyChunksAndTheCrossRing) {
  const Algorithm& a = algorithm(K::kAllReduce, "hier_leader");
  for (const auto& hostOf : {layouts()[0], layouts()[3]}) {
    SCOPED_TRACE(describe(hostOf));
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {100003, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {100003, DataType::kBFloat16, ReduceOp::kAvg, true, kTinySegment});
    });
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {600001, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {600001, DataType::kInt32, ReduceOp::kMax, true, 65536});
    }, size_t{1} << 20);
  }
}

// The others run one slot ahead of the leader in a many-chunk all_reduce, and the collective after
// it reuses the slots at once: rounds of all_reduce (20 arena uses), all_gather and broadcast back
// to back, with a rank that is late in turn, every result checked. (A sequence check: the
// ordering that acquireStrict guards did not show as wrong data here without it in 30 runs.)
TEST(UnevenHosts, AllReducePipelineThenOtherCollectives) {
  const Algorithm& ar = algorithm(K::kAllReduce, "hier_leader");
  const Algorithm& ag = algorithm(K::kAllGather, "hier_leader");
  const Algorithm& bc = algorithm(K::kBroadcast, "hier_leader");
  for (const auto& hostOf : {layouts()[0], layouts()[1]}) {
    SCOPED_TRACE(describe(hostOf));
    const int n = static_cast<int>(hostOf.size());
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (int round = 0; round < 12; ++round) {
        if ((ctx.rank + round) % n == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
        checkAllReduce(ctx, ar, {20011, DataType::kFloat32, ReduceOp::kSum, round % 2 == 0,
                                 65536});
        checkAllGather(ctx, ag, 301, DataType::kInt32, Output::kContiguous, 65536);
        checkBroadcast(ctx, bc, 3001, DataType::kFloat32, round % n, false, 65536,
                       static_cast<size_t>(round) + 1);
      }
    });
  }
}

TEST(UnevenHosts, BroadcastHierLeaderFromEveryRoot) {
  const Algorithm& a = algorithm(K::kBroadcast, "hier_leader");
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      size_t salt = 0;
      for (int root = 0; root < ctx.size; ++root) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{3001}}) {
          checkBroadcast(ctx, a, count, DataType::kFloat32, root, root % 2 == 0, kTinySegment,
                         ++salt);
        }
      }
      for (DataType dt : kAllDataTypes) checkBroadcast(ctx, a, 777, dt, ctx.size - 1, false,
                                                      262144, ++salt);
    });
  }
}

TEST(UnevenHosts, AllGatherHierLeader) {
  const Algorithm& a = algorithm(K::kAllGather, "hier_leader");
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1037}}) {
        for (DataType dt : kAllDataTypes) {
          for (Output o : {Output::kContiguous, Output::kBlockList, Output::kInPlace}) {
            checkAllGather(ctx, a, count, dt, o, count % 2 == 1 ? kTinySegment : 262144);
          }
        }
      }
    });
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {  // many arena uses, a long ring
      checkAllGather(ctx, a, 70001, DataType::kFloat32, Output::kContiguous, 65536);
      checkAllGather(ctx, a, 70001, DataType::kInt8, Output::kBlockList, kTinySegment);
    }, size_t{1} << 20);
  }
}

TEST(UnevenHosts, ReduceScatterHierLeaderMatrix) {
  const Algorithm& a = algorithm(K::kReduceScatter, "hier_leader");
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    const std::vector<AllReduceCase> cases = allReduceCases(static_cast<int>(hostOf.size()));
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (const AllReduceCase& c : cases) checkReduceScatter(ctx, a, c);
      checkReduceScatter(ctx, a, {0, DataType::kFloat32, ReduceOp::kSum, false, kTinySegment});
    });
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      checkReduceScatter(ctx, a, {70001, DataType::kFloat32, ReduceOp::kSum, false, 65536});
      checkReduceScatter(ctx, a, {70001, DataType::kBFloat16, ReduceOp::kAvg, true, kTinySegment});
    }, size_t{1} << 20);
  }
}

TEST(UnevenHosts, RootedHierFromEveryRoot) {
  const Algorithm& reduce = algorithm(K::kReduce, "hier");
  const Algorithm& gather = algorithm(K::kGather, "hier");
  const Algorithm& scatter = algorithm(K::kScatter, "hier");
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    const int n = static_cast<int>(hostOf.size());
    const std::vector<AllReduceCase> sums = allReduceCases(n);
    const std::vector<RootedCase> blocks = rootedCases(n);
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (size_t k = 0; k < sums.size(); ++k) {
        checkReduce(ctx, reduce, sums[k], static_cast<int>(k % static_cast<size_t>(n)));
      }
      for (size_t k = 0; k < blocks.size(); ++k) {
        const int root = static_cast<int>(k % static_cast<size_t>(n));
        checkGather(ctx, gather, blocks[k], root);
        checkScatter(ctx, scatter, blocks[k], root);
      }
    });
  }
}

TEST(UnevenHosts, BarrierNoRankLeavesEarly) {
  for (const auto& hostOf : layouts()) {
    SCOPED_TRACE(describe(hostOf));
    const int n = static_cast<int>(hostOf.size());
    constexpr int kRounds = 6;
    std::vector<std::atomic<int>> arrived(kRounds);
    for (auto& x : arrived) x = 0;
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (int round = 0; round < kRounds; ++round) {
        if ((ctx.rank + round) % n == n - 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        arrived[static_cast<size_t>(round)].fetch_add(1);
        ctx.run(algorithm(K::kBarrier, "hier"),
                CollectiveArgs(Call::of(K::kBarrier, DataType::kUInt8, 0), nullptr, nullptr),
                262144);
        const int seen = arrived[static_cast<size_t>(round)].load();
        if (seen != n) {
          ctx.fail("round " + std::to_string(round) + ": left after " + std::to_string(seen) +
                   " of " + std::to_string(n) + " arrived");
        }
      }
    });
  }
}

}  // namespace
}  // namespace smddp::algo::testing
