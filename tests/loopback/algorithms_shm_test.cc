// The shared-memory arena algorithms over a heap arena shared by thread-ranks (4 KiB slots, so
// the larger cases run several chunks and both slots): the full all_reduce matrix for shm_direct
// and shm_split; arena identity checks (ranks in different collectives, or different sizes of one,
// fail with kMismatch on every rank instead of reading each other's data). Timeouts and dead
// peers on the arena path are covered by the multi-process failure tests (tests/mp/).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "algorithms_checks.h"
#include "smddp/error.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

class ShmAllReduce : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ShmAllReduce, Matrix) {
  runAllReduceMatrix(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ShmAllReduce,
                         ::testing::Combine(::testing::Values("shm_direct", "shm_split"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

// Large enough for many chunks of both slots, with a count no slice split divides evenly.
TEST(ShmAllReduce, ManyChunksOddCount) {
  for (const char* name : {"shm_direct", "shm_split"}) {
    const Algorithm& a = algorithm(K::kAllReduce, name);
    runRanks(3, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {100003, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {100003, DataType::kBFloat16, ReduceOp::kAvg, true, 1 << 20});
    });
  }
}

// Every rank must fail with kMismatch, and the message must name a peer.
void expectMismatch(int n, const std::function<CollectiveArgs(int rank, std::vector<float>&,
                                                              std::vector<float>&)>& make,
                    const std::function<const Algorithm&(int rank)>& pick) {
  runRanks(n, [&](RankContext& ctx) {
    std::vector<float> send(64, 1.0f), recv(64 * static_cast<size_t>(n), 0.0f);
    CollectiveArgs args = make(ctx.rank, send, recv);
    try {
      ctx.run(pick(ctx.rank), args, 1 << 20);
      ctx.fail("no error although the ranks called different collectives");
    } catch (const Error& e) {
      const std::string what = e.what();
      if (e.code() != ErrorCode::kMismatch || what.find("shared memory") == std::string::npos) {
        ctx.fail(std::string("wrong error: ") + what);
      }
    }
  });
}

CollectiveArgs allReduceArgs(std::vector<float>& send, std::vector<float>& recv, size_t count) {
  CollectiveArgs args;
  args.kind = K::kAllReduce;
  args.send = send.data();
  args.recv = recv.data();
  args.count = count;
  args.dtype = DataType::kFloat32;
  return args;
}

TEST(ShmIdentity, DifferentSizesFailEverywhere) {
  for (const char* name : {"shm_direct", "shm_split"}) {
    expectMismatch(
        3,
        [](int rank, auto& send, auto& recv) {
          return allReduceArgs(send, recv, rank == 1 ? 13 : 14);
        },
        [name](int) -> const Algorithm& { return algorithm(K::kAllReduce, name); });
  }
}

TEST(ShmIdentity, DifferentRootsFailOnTheRoots) {
  // Ranks 0 and 2 each believe they are the root; both must notice the disagreement.
  runRanks(3, [&](RankContext& ctx) {
    std::vector<float> buf(64, static_cast<float>(ctx.rank));
    CollectiveArgs args;
    args.kind = K::kBroadcast;
    args.send = args.recv = buf.data();
    args.count = buf.size();
    args.dtype = DataType::kFloat32;
    args.root = ctx.rank == 0 ? 0 : 2;
    try {
      ctx.run(algorithm(K::kBroadcast, "shm"), args, 1 << 20);
      if (ctx.rank != 1) ctx.fail("a root returned although the ranks disagree on the root");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kMismatch) ctx.fail(std::string("wrong error: ") + e.what());
    }
  });
}

TEST(ShmIdentity, BarrierAgainstAllReduce) {
  expectMismatch(
      2,
      [](int rank, auto& send, auto& recv) {
        if (rank == 0) return allReduceArgs(send, recv, 8);
        CollectiveArgs b;
        b.kind = K::kBarrier;
        return b;
      },
      [](int rank) -> const Algorithm& {
        return rank == 0 ? algorithm(K::kAllReduce, "shm_direct") : algorithm(K::kBarrier, "shm");
      });
}

}  // namespace
}  // namespace smddp::algo::testing
