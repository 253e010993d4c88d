// SPDX-License-Identifier: Apache-2.0
// Faults in reduce_scatter, reduce, gather, scatter and all_to_all over real libfabric (shm with
// the arena, and tcp on 127.0.0.1), 3 forked ranks, collective timeout 60 s, so that a prompt
// failure must come from liveness or mismatch detection: a rank SIGKILLed at a random point of a
// stream of those collectives (1 KiB - 4 MiB, roots moving), and ranks that call different
// collectives at one sequence number (a gather against a reduce_scatter), and an all_to_allv whose
// pairs disagree on their counts. Every surviving rank must raise within the bound, naming the
// culprit or both calls. forkRanks bounds every case.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "failure_helpers.h"
#include "fork_ranks.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using namespace failure;

// Collective k of the stream: one of the five, its size and root from k.
Request post(Communicator& c, int k, std::vector<float>& in, std::vector<float>& out) {
  static const size_t kBytes[] = {1 << 10, 64 << 10, 1 << 20, 4 << 20};
  const size_t per = kBytes[k % 4] / sizeof(float) / kRanks;
  const auto F = DataType::kFloat32;
  const int root = k % kRanks;
  const Buffer whole(in.data(), per * kRanks, F), block(out.data(), per, F);
  switch ((k / 4) % 5) {
    case 0:
      return c.reduceScatter(whole, block, ReduceOp::kSum);
    case 4:
      return c.allToAll(whole, Buffer(out.data(), per * kRanks, F));
    case 1:
      return c.reduce(block, Buffer(out.data() + per, per, F), ReduceOp::kMax, root);
    case 2:
      return c.gather(block, whole, root);
    default:
      return c.scatter(whole, block, root);
  }
}

class FailureCollectives : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_failure_coll"); }
  void TearDown() override { test::removeTree(dir_); }
  std::shared_ptr<Store> store() const { return makeFileStore(dir_); }
  std::string dir_;
};

TEST_P(FailureCollectives, KilledRankIsNamedByEveryOtherRankWithinSeconds) {
  std::mt19937 rng(static_cast<unsigned>(::getpid()));
  const int victim = 1 + static_cast<int>(rng() % (kRanks - 1));
  const int dieAt = static_cast<int>(rng() % 16);
  std::printf("victim rank %d dies at collective %d\n", victim, dieAt);
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = store();
    auto c = join(s, GetParam(), rank, 60s);
    std::vector<float> in((4 << 20) / sizeof(float), 1.f), out(in.size(), 0.f);
    const auto t0 = Clock::now();
    try {
      for (int k = 0; k < 32; ++k) {
        Request r = post(*c, k, in, out);
        if (rank == victim && k == dieAt) ::raise(SIGKILL);  // inside the stream
        r.wait();
      }
    } catch (const Error& e) {
      const int code = expectFailure(rank, e, {ErrorCode::kPeerFailure},
                                     {"rank " + std::to_string(victim) + " ("}, t0, 20.0);
      holdUntilAllRaised(*s, rank, victim);
      return code;
    }
    return 5;  // no error at all
  });
  EXPECT_EQ(report, "rank " + std::to_string(victim) + " killed by signal 9");
}

TEST_P(FailureCollectives, AGatherAgainstAReduceScatterRaisesOnEveryRank) {
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = store();
    auto c = join(s, GetParam(), rank, 60s);
    std::vector<float> a(3 * 1024, 1.f), b(1024, 0.f);
    c->barrier().wait();
    const auto t0 = Clock::now();
    try {
      if (rank == 2) {  // the root of a gather: it waits for the others' blocks
        c->gather(Buffer(b.data(), 256, DataType::kFloat32),
                  Buffer(a.data(), 768, DataType::kFloat32), 2)
            .wait();
      } else {
        c->reduceScatter(Buffer(a.data(), a.size(), DataType::kFloat32),
                         Buffer(b.data(), b.size(), DataType::kFloat32), ReduceOp::kSum)
            .wait();
      }
      c->barrier().wait();
    } catch (const Error& e) {
      return expectFailure(
          rank, e, {ErrorCode::kMismatch},
          {"called reduce_scatter(float32, 1024, sum)", "called gather(float32, 256, root=2)"}, t0,
          15.0);
    }
    return 5;
  });
  EXPECT_EQ(report, "");
}

TEST_P(FailureCollectives, AllToAllvPairsThatDisagreeOnCountsRaiseOnEveryRank) {
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = store();
    auto c = join(s, GetParam(), rank, 60s);
    // Every rank sends 100 elements to each peer and expects 101 from each.
    std::vector<size_t> sendCounts(kRanks, 100), recvCounts(kRanks, 101), offsets(kRanks);
    sendCounts[static_cast<size_t>(rank)] = recvCounts[static_cast<size_t>(rank)] = 100;
    for (size_t q = 0; q < offsets.size(); ++q) offsets[q] = q * 101;
    std::vector<float> in(kRanks * 101, 1.f), out(in.size(), 0.f);
    c->barrier().wait();
    const auto t0 = Clock::now();
    try {
      c->allToAllV(Buffer(in.data(), in.size(), DataType::kFloat32), sendCounts, offsets,
                   Buffer(out.data(), out.size(), DataType::kFloat32), recvCounts, offsets)
          .wait();
      c->barrier().wait();
    } catch (const Error& e) {
      const int code = expectFailure(rank, e, {ErrorCode::kMismatch}, {"all_to_allv"}, t0, 15.0);
      holdUntilAllRaised(*s, rank, -1);  // nobody leaves while a peer may still be reading
      return code;
    }
    return 5;
  });
  EXPECT_EQ(report, "");
}

INSTANTIATE_TEST_SUITE_P(Providers, FailureCollectives, ::testing::Values("shm", "tcp", "net"));

}  // namespace
}  // namespace smddp
