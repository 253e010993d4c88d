// SPDX-License-Identifier: Apache-2.0
// gather and scatter algorithms (linear, arena) over the loopback transport and a heap arena of
// 4 KiB slots, for n = 2..16: per-rank counts {1, 13, 5n+1, 1037} x dtypes x in place / out of
// place (64 B and 256 KiB segments) x contiguous or list (the root's blocks as separate buffers,
// args.blocks), the root moving over every rank from case to case. Values
// are broadcastValue(rank, index), exact in every dtype; a rank's buffers that the collective
// must not write (a non-root's gather output, every input) are checked untouched.
#include <vector>

#include "algorithms_rooted_checks.h"

namespace smddp::algo::testing {
namespace {

class GatherScatter : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(GatherScatter, EveryRootAndDtype) {
  const auto [algo, n] = GetParam();
  const Algorithm& g = algorithm(CollectiveKind::kGather, algo);
  const Algorithm& s = algorithm(CollectiveKind::kScatter, algo);
  const std::vector<RootedCase> all = rootedCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (size_t k = 0; k < all.size(); ++k) {
      const int root = static_cast<int>(k % static_cast<size_t>(n));
      checkGather(ctx, g, all[k], root);
      checkScatter(ctx, s, all[k], root);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GatherScatter,
                         ::testing::Combine(::testing::Values("linear", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
