// SPDX-License-Identifier: Apache-2.0
// Time estimates (Communicator::beginEstimate / endEstimate): calls in between are checked but
// not run (buffers untouched, requests complete at once, nothing communicated: one rank alone
// estimates while its peers do nothing), cost what the model says for the algorithm the
// communicator would select (flat, arena and hierarchical shapes), add up, leave the
// communicator usable with no sequence number consumed, and misuse is refused naming the rank.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "common/cpus.h"
#include "loopback/loopback_group.h"
#include "model/costs.h"
#include "model/params.h"

namespace smddp::testing {
namespace {

double estimateAllReduce(Communicator& c, size_t count) {
  std::vector<float> in(count, 1.0f), out(count, -1.0f);
  c.beginEstimate();
  Request r = c.allReduce(Buffer(in.data(), count, DataType::kFloat32),
                          Buffer(out.data(), count, DataType::kFloat32), ReduceOp::kSum);
  EXPECT_TRUE(r.completed());
  r.wait();
  const double us = c.endEstimate();
  for (float v : out) EXPECT_EQ(v, -1.0f);  // not run
  return us;
}

TEST(Estimate, OneRankAloneCostsWithoutRunningAndTheGroupStaysUsable) {
  for (int n : {1, 3, 5}) {
    auto comms = makeLoopbackGroup(n);
    // Rank 0 estimates while the others do nothing: no wait on a peer.
    const double small = estimateAllReduce(*comms[0], 2);
    const double large = estimateAllReduce(*comms[0], 1 << 20);
    if (n == 1) {
      EXPECT_GE(small, 0.0);
    } else {
      EXPECT_GT(small, 0.0) << n;
      EXPECT_GT(large, small) << n;
    }
    // Two calls cost the sum of each.
    std::vector<float> a(1024, 1.0f), b(1024);
    comms[0]->beginEstimate();
    comms[0]->allReduce(Buffer(a.data(), 1024, DataType::kFloat32),
                        Buffer(b.data(), 1024, DataType::kFloat32), ReduceOp::kSum);
    const double one = comms[0]->endEstimate();
    comms[0]->beginEstimate();
    for (int i = 0; i < 2; ++i) {
      comms[0]->allReduceBlocking(Buffer(a.data(), 1024, DataType::kFloat32),
                                  Buffer(b.data(), 1024, DataType::kFloat32), ReduceOp::kSum);
    }
    EXPECT_NEAR(comms[0]->endEstimate(), 2 * one, 1e-9 * one + 1e-12) << n;
    // Then every rank runs a real call: the estimates took no sequence number.
    runRanks(comms, [&](int rank, Communicator& c) {
      std::vector<int32_t> v(7, rank + 1), out(7);
      c.allReduce(Buffer(v.data(), 7, DataType::kInt32), Buffer(out.data(), 7, DataType::kInt32),
                  ReduceOp::kSum)
          .wait();
      for (int32_t x : out) EXPECT_EQ(x, n * (n + 1) / 2);
    });
  }
}

TEST(Estimate, EveryCollectiveAndSendRecvCosts) {
  auto comms = makeLoopbackGroup(3);
  Communicator& c = *comms[0];
  std::vector<float> in(3 * 4096, 1.0f), out(3 * 4096, -1.0f);
  const Buffer block(in.data(), 4096, DataType::kFloat32);
  const Buffer whole(out.data(), 3 * 4096, DataType::kFloat32);
  c.beginEstimate();
  c.allGather(block, whole);
  const double gather = c.endEstimate();
  c.beginEstimate();
  c.reduceScatter(Buffer(in.data(), 3 * 4096, DataType::kFloat32),
                  Buffer(out.data(), 4096, DataType::kFloat32), ReduceOp::kSum);
  const double scatter = c.endEstimate();
  c.beginEstimate();
  c.broadcast(block, Buffer(out.data(), 4096, DataType::kFloat32), 1);
  c.barrier().wait();
  c.allToAll(Buffer(in.data(), 3 * 4096, DataType::kFloat32), whole);
  c.reduce(block, Buffer(out.data(), 4096, DataType::kFloat32), ReduceOp::kMax, 2);
  c.gather(block, whole, 0);
  c.scatter(Buffer(in.data(), 3 * 4096, DataType::kFloat32),
            Buffer(out.data(), 4096, DataType::kFloat32), 0);
  c.send(block, 1, 7);  // no receiver: nothing is sent
  c.recv(Buffer(out.data(), 4096, DataType::kFloat32), 2, 7).wait();
  const double rest = c.endEstimate();
  EXPECT_GT(gather, 0.0);
  EXPECT_GT(scatter, 0.0);
  EXPECT_GT(rest, gather);
  for (float v : out) EXPECT_EQ(v, -1.0f);
}

TEST(Estimate, ArenaAndHostsCostTheSelectedAlgorithmOnTheirShape) {
  // The estimate is the model's time for what the selector runs, on a Machine of the
  // communicator's shape: one host of 2 with the test's heap arena (4 KiB slots): arena_split
  // for 1 MiB (arena_direct for 4 KiB); 2 hosts of 2 (64 KiB slots): hier_split, which also pays the network (the prior).
  // The loopback ranks share this process's CPUs.
  const unsigned cpus = common::usableCpusOf({common::describeUsableCpus()});
  auto machine = [&](int nodes, int perNode, double slot) {
    model::Shape s;
    s.nodes = nodes;
    s.perNode = perNode;
    s.hostCpus = cpus;
    s.slotBytes = slot;
    return model::priors(s, model::measureRates());
  };
  auto host = makeLoopbackGroup(2, Options(), nullptr, 4096);
  auto hosts = makeLoopbackHosts({0, 0, 1, 1});
  const double bytes = 1 << 20;
  // 1 MiB takes pooled; on ordinary tensors that is arena_split after one synchronisation more
  const model::Machine one = machine(1, 2, 4096);
  EXPECT_NEAR(estimateAllReduce(*host[1], 1 << 18),
              1e6 * (one.arena_alpha +
                     model::seconds(one, CollectiveKind::kAllReduce, "arena_split", bytes)),
              1e-6);
  EXPECT_NEAR(estimateAllReduce(*host[1], 1 << 10),
              1e6 * model::seconds(one, CollectiveKind::kAllReduce, "arena_direct", 4096), 1e-6);
  const model::Machine m = machine(2, 2, 65536);
  const double across = estimateAllReduce(*hosts[1], 1 << 18);
  EXPECT_NEAR(across, 1e6 * model::seconds(m, CollectiveKind::kAllReduce, "hier_split", bytes),
              1e-6);
  // the cross step: a host's link carries 2 (H-1)/H of the buffer each way
  EXPECT_GT(across, 1e6 * bytes * m.netBeta());
}

TEST(Estimate, BadArgumentsStillThrowAndMisuseIsNamed) {
  auto comms = makeLoopbackGroup(3);
  Communicator& c = *comms[2];
  std::vector<float> v(10);
  c.beginEstimate();
  try {
    c.beginEstimate();
    FAIL() << "a second begin";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("rank 2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("already running"), std::string::npos) << e.what();
  }
  // 10 elements do not split into 3 blocks: refused as without an estimate, nothing costed.
  EXPECT_THROW(c.reduceScatter(Buffer(v.data(), 10, DataType::kFloat32),
                               Buffer(v.data(), 3, DataType::kFloat32), ReduceOp::kSum),
               Error);
  EXPECT_EQ(c.endEstimate(), 0.0);
  try {
    c.endEstimate();
    FAIL() << "end without begin";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("no estimate is running"), std::string::npos);
  }
}

}  // namespace
}  // namespace smddp::testing
