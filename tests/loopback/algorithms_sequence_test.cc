// SPDX-License-Identifier: Apache-2.0
// Several collectives back to back on one fabric, as a communicator issues them: consecutive
// sequence numbers, mixed algorithms, one ExecResources per rank reused throughout, and ranks
// skewed so that a fast rank posts the next collective's messages while its peers are still in the
// previous one. Any cross-talk between collectives shows up as wrong data or a timeout.
// Also: a collective that would overflow the tag's message index field fails up front on every
// rank.
#include <gtest/gtest.h>

#include <thread>

#include "algorithms_checks.h"
#include "smddp/error.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

void mixedRound(RankContext& ctx, int round) {
  const int n = ctx.size;
  if (ctx.rank == round % n) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  checkAllReduce(ctx, algorithm(K::kAllReduce, "recursive_doubling"),
                 {13, DataType::kFloat32, ReduceOp::kSum, false, 262144});
  checkBroadcast(ctx, algorithm(K::kBroadcast, "chain"), 300, DataType::kBFloat16, 1 % n, false,
                 kTinySegment);
  checkAllGather(ctx, algorithm(K::kAllGather, "bruck"), 7, DataType::kInt32, Output::kContiguous,
                 262144);
  CollectiveArgs barrier;
  barrier.kind = K::kBarrier;
  ctx.run(algorithm(K::kBarrier, "dissemination"), barrier, 262144);
  checkAllReduce(ctx, algorithm(K::kAllReduce, "ring"),
                 {1037, DataType::kBFloat16, ReduceOp::kAvg, true, kTinySegment});
  checkBroadcast(ctx, algorithm(K::kBroadcast, "binomial"), 13, DataType::kInt64, n - 1, true,
                 262144);
  checkAllGather(ctx, algorithm(K::kAllGather, "ring"), 301, DataType::kFloat16, Output::kBlockList,
                 kTinySegment);
  checkAllReduce(ctx, algorithm(K::kAllReduce, "ring"),
                 {5, DataType::kInt8, ReduceOp::kProd, false, kTinySegment});
  checkAllReduce(ctx, algorithm(K::kAllReduce, "recursive_doubling"),
                 {1037, DataType::kFloat64, ReduceOp::kMax, true, 262144});
  // The arena algorithms between message-based ones: their use counters advance on their own.
  checkAllReduce(ctx, algorithm(K::kAllReduce, "arena_direct"),
                 {13, DataType::kFloat16, ReduceOp::kSum, false, 262144});
  checkBroadcast(ctx, algorithm(K::kBroadcast, "arena_eager"), 7, DataType::kInt64, round % n, true,
                 262144);
  checkBroadcast(ctx, algorithm(K::kBroadcast, "arena"), 3000, DataType::kInt32, n - 1, false,
                 262144);
  checkBroadcast(ctx, algorithm(K::kBroadcast, "arena_eager"), 301, DataType::kFloat16, 0, false,
                 262144);
  checkAllReduce(ctx, algorithm(K::kAllReduce, "arena_split"),
                 {2049, DataType::kFloat32, ReduceOp::kMin, true, 262144});
  checkAllGather(ctx, algorithm(K::kAllGather, "arena"), 1500, DataType::kUInt8, Output::kBlockList,
                 262144);
  ctx.run(algorithm(K::kBarrier, "arena"), barrier, 262144);
  checkAllReduce(ctx, algorithm(K::kAllReduce, "ring"),
                 {77, DataType::kInt32, ReduceOp::kSum, false, kTinySegment});
}

class Sequence : public ::testing::TestWithParam<int> {};

TEST_P(Sequence, MixedAlgorithmsBackToBack) {
  runRanks(GetParam(), [](RankContext& ctx) {
    for (int round = 0; round < 4; ++round) mixedRound(ctx, round);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Sequence, ::testing::Values(2, 3, 5, 8, 16));

// With 1-byte segments, 2^24 + 2 uint8 elements need more than 2^24 message indices; every rank
// must fail with kInvalidArgument before posting anything (so nobody waits for a peer that gave
// up).
void expectMessageIndexOverflow(K kind, const char* name, size_t count) {
  const Algorithm& a = algorithm(kind, name);
  runRanks(2, [&](RankContext& ctx) {
    std::vector<unsigned char> send(count, 1), recv(count * (kind == K::kAllGather ? 2 : 1));
    CollectiveArgs args;
    args.kind = kind;
    args.send = send.data();
    args.recv = recv.data();
    args.count = count;
    args.dtype = DataType::kUInt8;
    try {
      ctx.run(a, args, 1);
      ctx.fail(std::string(name) +
               ": no error for a collective that overflows the message index field");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kInvalidArgument ||
          std::string(e.what()).find("SMDDP_SEGMENT_BYTES") == std::string::npos) {
        ctx.fail(std::string(name) + ": wrong error: " + e.what());
      }
    }
  });
}

TEST(SlotBudget, OverflowFailsUpFrontOnEveryRank) {
  const size_t justOver = (size_t{1} << 24) + 2;
  expectMessageIndexOverflow(K::kAllReduce, "ring", justOver);
  expectMessageIndexOverflow(K::kBroadcast, "chain", justOver);
  expectMessageIndexOverflow(K::kAllGather, "ring", justOver);
}

}  // namespace
}  // namespace smddp::algo::testing
