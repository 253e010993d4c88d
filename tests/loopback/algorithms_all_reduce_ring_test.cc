// SPDX-License-Identifier: Apache-2.0
// Ring (segmented, pipelined) all_reduce over the loopback transport: the full matrix per rank
// count.
#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

class Ring : public ::testing::TestWithParam<int> {};

TEST_P(Ring, Matrix) { runAllReduceMatrix("ring", GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ranks, Ring, ::testing::Values(2, 3, 4, 5, 7, 8, 16));

}  // namespace
}  // namespace smddp::algo::testing
