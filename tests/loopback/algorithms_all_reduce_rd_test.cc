// SPDX-License-Identifier: Apache-2.0
// Recursive-doubling all_reduce over the loopback transport: the full matrix per rank count.
#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

class RecursiveDoubling : public ::testing::TestWithParam<int> {};

TEST_P(RecursiveDoubling, Matrix) { runAllReduceMatrix("recursive_doubling", GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ranks, RecursiveDoubling, ::testing::Values(2, 3, 4, 5, 7, 8, 16));

}  // namespace
}  // namespace smddp::algo::testing
