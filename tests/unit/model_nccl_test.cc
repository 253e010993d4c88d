// SPDX-License-Identifier: Apache-2.0
// The NCCL plane's costs (forms_nccl.cc) against closed forms: steps at gpu_alpha, bytes through
// the ring's slowest link (the GPUs' fabric in a node, the node's network across nodes), and
// call_alpha on top.
#include <gtest/gtest.h>

#include "model/costs.h"

namespace smddp::model {
namespace {

using K = CollectiveKind;

// H nodes of L GPUs; steps cost 1 s, GPUs move 10 bytes/s, the network 4 bytes/s at 50 %.
Machine gpus(int nodes, int perNode) {
  Machine m;
  m.nodes = nodes;
  m.per_node = perNode;
  m.gpu_alpha = 1.0;
  m.gpu_rate = 10.0;
  m.net_rate = 4.0;
  m.net_eff = 0.5;
  m.call_alpha = 0.0;
  return m;
}

TEST(ModelNccl, RingStepsAndBytesWithinANode) {
  for (int n : {2, 3, 5, 8}) {
    const Machine m = gpus(1, n);
    const double f = (n - 1.0) / n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllReduce, 100), 2 * (n - 1) + 2 * f * 100 / 10) << n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllGather, 100), (n - 1) + f * 100 / 10) << n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kReduceScatter, 100), (n - 1) + f * 100 / 10) << n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kBroadcast, 100), (n - 1) + 100 / 10.0) << n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kBarrier, 0), 2 * (n - 1)) << n;
    EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kSend, 50), 1 + 50 / 10.0) << n;
  }
}

TEST(ModelNccl, AcrossNodesTheNetworkIsTheBottleneck) {
  const Machine m = gpus(2, 4);  // the network's 2 bytes/s against the GPUs' 10
  EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllReduce, 80), 14 + 2 * 7.0 / 8 * 80 / 2);
  // all_to_all: 4 of 8 blocks leave each GPU's node, 4 GPUs share its network
  EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllToAll, 80), 1 + 4 * 4.0 / 8 * 80 / 2);
  Machine fast = m;
  fast.net_rate = 1000.0;  // a network faster than the GPUs' fabric: the fabric bounds the ring
  EXPECT_DOUBLE_EQ(ncclSeconds(fast, K::kAllReduce, 80), 14 + 2 * 7.0 / 8 * 80 / 10);
}

TEST(ModelNccl, OneRankCostsTheCallOnly) {
  Machine m = gpus(1, 1);
  m.call_alpha = 3.0;
  EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllReduce, 1e9), 3.0);
  m.per_node = 2;
  EXPECT_DOUBLE_EQ(ncclSeconds(m, K::kAllReduce, 0), 3.0 + 2.0);
}

}  // namespace
}  // namespace smddp::model
