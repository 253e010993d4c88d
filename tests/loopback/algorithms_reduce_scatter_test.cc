// SPDX-License-Identifier: Apache-2.0
// reduce_scatter algorithms (ring, arena, fixed_order) over the loopback transport and a heap arena
// of 4 KiB slots: per-rank counts {1, 13, 5n+1, 1037} (count < n, odd, not divisible by n, several
// segments with 64 B segments and several arena uses) x dtypes x ops x in place (the output is
// this rank's block of the input) / out of place, for n = 2..16. Inputs are those of the
// all_reduce matrix at the global index q * count + i, so the expected value of this rank's
// element i is the all_reduce result at rank * count + i: closed-form and exact in every dtype.
#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

class ReduceScatter : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ReduceScatter, Matrix) {
  const auto [name, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kReduceScatter, name);
  const std::vector<AllReduceCase> cases = allReduceCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (const AllReduceCase& c : cases) checkReduceScatter(ctx, a, c);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReduceScatter,
                         ::testing::Combine(::testing::Values("ring", "arena", "fixed_order"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
