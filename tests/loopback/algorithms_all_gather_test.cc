// SPDX-License-Identifier: Apache-2.0
// all_gather algorithms (bruck, ring, arena) and the barriers (dissemination, arena) over the
// loopback transport. all_gather: ranks {2,3,4,5,7,8,16} x per-rank counts {1, 13, 5n+1, 301 in 64
// B segments} x all dtypes x outputs {contiguous, separate blocks in reverse memory order, in
// place}; rank r's element i is a small integer of (r, i). Barrier: no rank may leave before all
// have arrived.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

class AllGather : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(AllGather, Matrix) {
  const Algorithm& a = algorithm(CollectiveKind::kAllGather, std::get<0>(GetParam()));
  const int n = std::get<1>(GetParam());
  runRanks(n, [&](RankContext& ctx) {
    const size_t shapes[][2] = {
        {1, 262144}, {13, kTinySegment}, {5 * size_t(n) + 1, 262144}, {301, kTinySegment}};
    for (const auto& s : shapes)
      for (DataType dt : kAllDataTypes)
        for (Output o : {Output::kContiguous, Output::kBlockList, Output::kInPlace})
          checkAllGather(ctx, a, s[0], dt, o, s[1]);
  });
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AllGather,
                         ::testing::Combine(::testing::Values("bruck", "ring", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

// Each rank arrives late by a rank-dependent delay and counts itself in before the barrier; after
// the barrier every rank must see all n arrivals of that round.
class Barrier : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(Barrier, NoRankLeavesEarly) {
  const int n = std::get<1>(GetParam());
  constexpr int kRounds = 6;
  const Algorithm& a = algorithm(CollectiveKind::kBarrier, std::get<0>(GetParam()));
  std::vector<std::atomic<int>> arrived(kRounds);
  for (auto& x : arrived) x = 0;
  runRanks(n, [&](RankContext& ctx) {
    for (int round = 0; round < kRounds; ++round) {
      if ((ctx.rank + round) % n == n - 1)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      arrived[static_cast<size_t>(round)].fetch_add(1);
      CollectiveArgs args;
      args.kind = CollectiveKind::kBarrier;
      ctx.run(a, args, 262144);
      const int seen = arrived[static_cast<size_t>(round)].load();
      if (seen != n) {
        ctx.fail(std::string("barrier ") + a.name + " n=" + std::to_string(n) + " round " +
                 std::to_string(round) + ": left after " + std::to_string(seen) + " of " +
                 std::to_string(n) + " arrived");
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Barrier,
                         ::testing::Combine(::testing::Values("dissemination", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
