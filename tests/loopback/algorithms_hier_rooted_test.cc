// SPDX-License-Identifier: Apache-2.0
// The hierarchical reduce, gather and scatter (hier) over thread-ranks laid out as several hosts
// (runRanksOnHosts: interleaved, rank r on host r % hosts, and host by host): the closed-form
// checks of the flat algorithms' tests (every dtype and op, in place and out of place, the
// root's blocks contiguous or as separate buffers) with the root moving over every rank, for odd
// and even host counts and ranks per host; several arena uses (4 KiB slots). Without host
// groups they fail as the others do (algorithms_hier_collectives_test).
#include <gtest/gtest.h>

#include <vector>

#include "algorithms_rooted_checks.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

class HierRooted : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(HierRooted, ReduceMatrixWithEveryRoot) {
  const auto [hosts, perHost, consecutive] = GetParam();
  const Algorithm& a = algorithm(K::kReduce, "hier");
  const std::vector<AllReduceCase> cases = allReduceCases(hosts * perHost);
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    for (size_t k = 0; k < cases.size(); ++k) {
      checkReduce(ctx, a, cases[k], static_cast<int>(k % static_cast<size_t>(ctx.size)));
    }
  }, 4096, consecutive);
}

TEST_P(HierRooted, GatherScatterEveryRootAndDtype) {
  const auto [hosts, perHost, consecutive] = GetParam();
  const Algorithm& g = algorithm(K::kGather, "hier");
  const Algorithm& s = algorithm(K::kScatter, "hier");
  const std::vector<RootedCase> all = rootedCases(hosts * perHost);
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    for (size_t k = 0; k < all.size(); ++k) {
      const int root = static_cast<int>(k % static_cast<size_t>(ctx.size));
      checkGather(ctx, g, all[k], root);
      checkScatter(ctx, s, all[k], root);
    }
  }, 4096, consecutive);
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierRooted,
                         ::testing::Combine(::testing::Values(2, 3, 5),  // hosts
                                            ::testing::Values(2, 3),     // ranks per host
                                            ::testing::Bool()));         // host by host

}  // namespace
}  // namespace smddp::algo::testing
