// SPDX-License-Identifier: Apache-2.0
// reduce algorithms (binomial, arena, fixed_order) over the loopback transport and a heap arena of
// 4 KiB slots: the all_reduce matrix (counts {1, 13, 5n+1, 1037} x dtypes x ops x in place / out of
// place) with the root moving over every rank from case to case, for n = 2..16. The root's
// output must equal the all_reduce result; the other ranks' output buffers must stay untouched.
#include "algorithms_rooted_checks.h"

namespace smddp::algo::testing {
namespace {

class Reduce : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(Reduce, MatrixWithEveryRoot) {
  const auto [name, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kReduce, name);
  const std::vector<AllReduceCase> cases = allReduceCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (size_t k = 0; k < cases.size(); ++k) {
      checkReduce(ctx, a, cases[k], static_cast<int>(k % static_cast<size_t>(n)));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Reduce,
                         ::testing::Combine(::testing::Values("binomial", "arena", "fixed_order"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
