// SPDX-License-Identifier: Apache-2.0
// Hosts with different numbers of ranks (3 + 2 + 1, 1 + 2, 2 + 1 + 4; consecutive and
// interleaved ranks): the leader forms that run there — all_reduce hier_leader (the closed-form
// matrix of every dtype and op, many chunks, the cross ring with 1 MiB slots) and barrier hier (no
// rank leaves before every rank arrived) — over thread-ranks with a heap arena per host
// (runRanksOnUnevenHosts).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "algorithms_checks.h"

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
