// SPDX-License-Identifier: Apache-2.0
// Fixed-order all_reduce (SMDDP_DETERMINISTIC) over the loopback transport: the full matrix per
// rank count (its reduce_scatter and reduce are in those shards' matrices).
#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

class FixedOrder : public ::testing::TestWithParam<int> {};

TEST_P(FixedOrder, Matrix) { runAllReduceMatrix("fixed_order", GetParam()); }

INSTANTIATE_TEST_SUITE_P(Ranks, FixedOrder, ::testing::Values(2, 3, 4, 5, 7, 8, 16));

}  // namespace
}  // namespace smddp::algo::testing
