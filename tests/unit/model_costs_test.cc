// SPDX-License-Identifier: Apache-2.0
// The cost model against closed forms: the arena forms on one host (synchronisations, copies,
// reductions counted as their files say), the flat forms' steps, the hierarchical forms' link
// bytes, the token bucket's rule, CPU sharing, call_alpha, the selector's choice on a shape, and
// refusals. (tests/python/test_cost_model.py checks the rest through bench/model.)
#include <gtest/gtest.h>

#include "model/costs.h"
#include "model/select.h"
#include "smddp/error.h"

namespace smddp::model {
namespace {

using K = CollectiveKind;

// One host of n ranks: only the arena's synchronisation costs (1 s each): counts them.
Machine syncsOnly(int n) {
  Machine m;
  m.per_node = n;
  m.arena_alpha = 1.0;
  m.copy_rate = 1e300;
  m.gamma = 0.0;
  return m;
}
// One host of n ranks, free synchronisations, 1 byte/s copies, 2 s per reduced byte.
Machine bytesOnly(int n) {
  Machine m;
  m.per_node = n;
  m.arena_alpha = 0.0;
  m.copy_rate = 1.0;
  m.gamma = 2.0;
  return m;
}

TEST(ModelCosts, ArenaSynchronisationsPerCall) {
  for (int n : {2, 3, 5, 7}) {
    const Machine m = syncsOnly(n);
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "arena_direct", 4096), 2.0) << n;
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "arena_split", 64 * 1024), 2.0) << n;
    // half a slot a chunk: 4 MiB is 8 chunks of 512 KiB, two synchronisations each
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "arena_split", 4 << 20), 16.0) << n;
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "pooled", 4 << 20), 3.0) << n;
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kBarrier, "arena", 0), 1.0) << n;
    EXPECT_DOUBLE_EQ(sumSeconds(m, K::kBroadcast, "arena_eager", 64), 1.0) << n;
  }
}

TEST(ModelCosts, ArenaBytesCopiedAndReduced) {
  for (int n : {2, 3, 5, 7}) {
    const Machine m = bytesOnly(n);
    const double B = 3000.0 * n;  // divisible by n
    // arena_split: (n-1)/n in, all out; (n-1)/n reduced (the reduction split n ways)
    EXPECT_NEAR(sumSeconds(m, K::kAllReduce, "arena_split", B),
                ((n - 1.0) / n + 1) * B + 2 * (n - 1.0) / n * B, 1e-6)
        << n;
    // arena_direct: one copy in, every rank reduces the n-1 others
    EXPECT_NEAR(sumSeconds(m, K::kAllReduce, "arena_direct", B), B + 2 * (n - 1) * B, 1e-6) << n;
    // pooled all_reduce: each byte read and written once, the reduction split n ways
    EXPECT_NEAR(sumSeconds(m, K::kAllReduce, "pooled", B), B + 2 * (n - 1.0) / n * B, 1e-6) << n;
    // all_gather through the arena: the own block in, n-1 out (B bytes of the gathered output)
    EXPECT_NEAR(sumSeconds(m, K::kAllGather, "arena", B), B, 1e-6) << n;
    // reduce_scatter: the whole input in, n-1 blocks reduced into the own
    EXPECT_NEAR(sumSeconds(m, K::kReduceScatter, "arena", B), B + 2 * (n - 1) * B / n, 1e-6) << n;
  }
}

TEST(ModelCosts, SharedCpusScaleTheWorkNotTheLink) {
  Machine m = bytesOnly(4);
  const double alone = sumSeconds(m, K::kAllReduce, "arena_split", 1 << 20);
  m.cpu_share = 2.0;  // 4 ranks on 2 CPUs
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "arena_split", 1 << 20), 2 * alone);
  m.call_alpha = 5.0;
  EXPECT_DOUBLE_EQ(seconds(m, K::kAllReduce, "arena_split", 1 << 20), 2 * alone + 5.0);
}

TEST(ModelCosts, FlatStepsAcrossNodes) {
  Machine m;  // 4 nodes of 1 rank: only the step latency (1 s)
  m.nodes = 4;
  m.net_alpha = 1.0;
  m.net_rate = 1e300;
  m.copy_rate = 1e300;
  m.gamma = 0.0;
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "ring", 8), 6.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "recursive_doubling", 8), 2.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllGather, "ring", 8), 3.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllGather, "bruck", 8), 2.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kReduceScatter, "ring", 8), 3.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kBroadcast, "binomial", 8), 2.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kBarrier, "dissemination", 0), 2.0);
  m.nodes = 5;  // not a power of two: fold and unfold
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kAllReduce, "recursive_doubling", 8), 4.0);
  EXPECT_DOUBLE_EQ(sumSeconds(m, K::kBarrier, "dissemination", 0), 3.0);
}

TEST(ModelCosts, LinkBytesOfTheHierarchicalForms) {
  Machine m;  // 2 hosts x 2 ranks, only the link (1 byte/s)
  m.nodes = 2;
  m.per_node = 2;
  m.net_alpha = 0.0;
  m.net_rate = 1.0;
  m.arena_alpha = 0.0;
  m.copy_rate = 1e300;
  m.gamma = 0.0;
  const double B = 64 << 20;
  EXPECT_NEAR(sumSeconds(m, K::kAllReduce, "hier_split", B), B, 1.0);         // 2(H-1)/H B
  EXPECT_NEAR(sumSeconds(m, K::kAllReduce, "ring", B), 1.5 * B, 1.0);         // 2(n-1)/n B
  EXPECT_NEAR(sumSeconds(m, K::kAllGather, "hier", B), B / 2, 1.0);           // (H-1)/H B
  EXPECT_NEAR(sumSeconds(m, K::kReduceScatter, "hier", B), B / 2, 1.0);
  EXPECT_NEAR(sumSeconds(m, K::kAllToAll, "pairwise", B), B, 1.0);  // L(n-L) blocks of B/n
  EXPECT_NEAR(parts(m, K::kAllGather, "hier", B).busiest, B / 2, 1.0);
}

TEST(ModelCosts, TokenBucketTakesTheLargerOfLatencyAndLinkBytes) {
  Machine m;
  m.nodes = 2;
  m.per_node = 2;
  m.net_alpha = 30e-6;
  m.net_rate = 125e6;
  m.arena_alpha = 10e-6;
  m.copy_rate = 1e300;
  m.gamma = 0.0;
  m.link_burst = 64 * 1024;
  EXPECT_NEAR(seconds(m, K::kAllReduce, "hier_direct", 64), 40e-6, 1e-9);
  EXPECT_NEAR(seconds(m, K::kAllReduce, "hier_direct", 4096), 2 * 4096 / 125e6, 1e-9);
}

TEST(ModelCosts, SelectedIsTheLibrarySelector) {
  Machine one;
  one.per_node = 4;
  EXPECT_EQ(selected(one, K::kAllReduce, 16 * 1024), "arena_direct");
  EXPECT_EQ(selected(one, K::kAllReduce, 64 * 1024), "arena_split");
  EXPECT_EQ(selected(one, K::kAllReduce, 1 << 20), "pooled");
  EXPECT_EQ(selected(one, K::kAllGather, 4 << 20), "pooled");  // 1 MiB blocks
  EXPECT_EQ(selected(one, K::kAllToAll, 4 * 1024), "arena");
  Machine hosts = one;
  hosts.nodes = 2;
  hosts.per_node = 2;
  EXPECT_EQ(selected(hosts, K::kAllReduce, 16 * 1024), "hier_leader");
  EXPECT_EQ(selected(hosts, K::kAllReduce, 16 * 1024 + 4), "hier_split");
  Machine flat = one;
  flat.nodes = 3;
  flat.per_node = 1;
  EXPECT_EQ(selected(flat, K::kAllReduce, 64 * 1024), "recursive_doubling");
  EXPECT_EQ(selected(flat, K::kAllReduce, 64 * 1024 + 4), "ring");
  for (K k : {K::kAllReduce, K::kAllGather, K::kReduceScatter, K::kBroadcast, K::kBarrier,
              K::kReduce, K::kGather, K::kScatter, K::kAllToAll}) {
    for (const Machine& m : {one, hosts, flat}) {
      for (double b : {0.0, 8.0, 4096.0 * 12, 16.0 * (1 << 20)}) {
        const std::string a = selected(m, k, b);
        EXPECT_TRUE(modelled(k, a)) << toString(k) << " " << a;
        EXPECT_GE(seconds(m, k, a, b), 0.0);
      }
    }
  }
}

TEST(ModelCosts, RefusesWhatItDoesNotCost) {
  Machine m;
  try {
    seconds(m, K::kAllReduce, "nonesuch", 8);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("all_reduce algorithm named \"nonesuch\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(modelled(K::kAllGather, "arena_split"));
  CollectiveKind k;
  EXPECT_TRUE(kindOf("reduce_scatter", &k));
  EXPECT_EQ(k, K::kReduceScatter);
  EXPECT_FALSE(kindOf("allreduce", &k));
}

}  // namespace
}  // namespace smddp::model
