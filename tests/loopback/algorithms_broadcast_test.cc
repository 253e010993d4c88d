// SPDX-License-Identifier: Apache-2.0
// Broadcast algorithms (binomial, chain, shm, arena_eager) over the loopback transport: ranks
// {2,3,4,5,7,8,16} x counts {1, 13, 5n+1, 1037 in 64 B segments} x all dtypes x roots
// {0, n/2, n-1} x in-place / out-of-place. The root's value at index i is a small integer
// depending on root and i; every other rank's output starts poisoned.
#include <gtest/gtest.h>

#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

void runBroadcastMatrix(const char* name, int n) {
  const Algorithm& a = algorithm(CollectiveKind::kBroadcast, name);
  runRanks(n, [&](RankContext& ctx) {
    const size_t shapes[][2] = {
        {1, 262144}, {13, kTinySegment}, {5 * size_t(n) + 1, 262144}, {1037, kTinySegment}};
    for (const auto& s : shapes)
      for (DataType dt : kAllDataTypes)
        for (int root : {0, n / 2, n - 1})
          for (bool inPlace : {false, true}) checkBroadcast(ctx, a, s[0], dt, root, inPlace, s[1]);
  });
}

class Broadcast : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(Broadcast, Matrix) { runBroadcastMatrix(std::get<0>(GetParam()), std::get<1>(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Algorithms, Broadcast,
                         ::testing::Combine(::testing::Values("binomial", "chain", "arena",
                                                              "arena_eager"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
