// SPDX-License-Identifier: Apache-2.0
// The shared-memory arena algorithms over a heap arena shared by thread-ranks (4 KiB slots, so
// the larger cases run several chunks and both slots): the full all_reduce matrix for arena_direct
// and arena_split; arena identity checks (ranks in different collectives, or different sizes of
// one, fail with kMismatch instead of reading each other's data; a one-chunk broadcast's root at
// its next collective), and roots running ahead without false alarms. Timeouts and dead peers on
// the arena path are covered by the multi-process failure tests (tests/mp/).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "algorithms_checks.h"
#include "smddp/error.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;
using namespace std::chrono_literals;

class ShmAllReduce : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ShmAllReduce, Matrix) {
  runAllReduceMatrix(std::get<0>(GetParam()), std::get<1>(GetParam()));
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ShmAllReduce,
                         ::testing::Combine(::testing::Values("arena_direct", "arena_split"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

// Large enough for many chunks of both slots, with a count no slice split divides evenly.
TEST(ShmAllReduce, ManyChunksOddCount) {
  for (const char* name : {"arena_direct", "arena_split"}) {
    const Algorithm& a = algorithm(K::kAllReduce, name);
    runRanks(3, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {100003, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {100003, DataType::kBFloat16, ReduceOp::kAvg, true, 1 << 20});
    });
  }
}

// Every rank must fail with kMismatch, and the message must name a peer.
void expectMismatch(
    int n,
    const std::function<CollectiveArgs(int rank, std::vector<float>&, std::vector<float>&)>& make,
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
  for (const char* name : {"arena_direct", "arena_split"}) {
    expectMismatch(
        3,
        [](int rank, auto& send, auto& recv) {
          return allReduceArgs(send, recv, rank == 1 ? 13 : 14);
        },
        [name](int) -> const Algorithm& { return algorithm(K::kAllReduce, name); });
  }
}

// Ranks 0 and 2 each believe they are the root; rank 1 follows rank 2, which agrees with it. The
// root of a one-chunk broadcast (64 floats < the 4 KiB slot) checks its peers in its next
// collective, before it releases its first use: the broadcast returns, the next collective fails
// on the roots, naming the broadcast, and completes on rank 1.
TEST(ShmIdentity, DifferentRootsFailOnTheRootsAtTheirNextCollective) {
  runRanks(3, [&](RankContext& ctx) {
    std::vector<float> buf(64, static_cast<float>(ctx.rank));
    ctx.run(algorithm(K::kBroadcast, "arena"), broadcastArgs(buf, 64, ctx.rank == 0 ? 0 : 2),
            1 << 20);
    if (ctx.rank == 1) {
      ctx.run(algorithm(K::kBarrier, "arena"), CollectiveArgs{}, 1 << 20);  // rank 1 agrees
    } else {
      expectBarrierMismatch(ctx, "arena", "broadcast #0", "barrier #1");
    }
  });
}

// With several chunks (4096 floats = 4 slots) the roots check on the first and fail in it.
TEST(ShmIdentity, DifferentRootsOfAManyChunkBroadcastFailInIt) {
  runRanks(2, [&](RankContext& ctx) {
    std::vector<float> buf(4096, static_cast<float>(ctx.rank));
    try {
      ctx.run(algorithm(K::kBroadcast, "arena"), broadcastArgs(buf, 4096, ctx.rank), 1 << 20);
      ctx.fail("a root returned although the ranks disagree on the root");
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kMismatch) ctx.fail(std::string("wrong error: ") + e.what());
    }
  });
}

// Roots that run ahead (one-chunk slot broadcasts whose check waits for the next collective;
// eager broadcasts up to the ring's depth) never see a false mismatch or stale data: long runs
// from one root, alternating roots, and a message-based collective between (it settles the checks
// too), with a rank that lags now and then. Up to 1000 floats: one slot chunk, up to 40 of the
// test ring's 100-byte entries.
class ShmRunAhead : public ::testing::TestWithParam<const char*> {};

TEST_P(ShmRunAhead, RootsRunningAheadSeeNoFalseMismatch) {
  for (int n : {2, 3, 5}) {
    runRanks(n, [&](RankContext& ctx) {
      const Algorithm& shm = algorithm(K::kBroadcast, GetParam());
      for (int i = 0; i < 400; ++i) {
        const int root = i < 100 ? 0 : i < 200 ? i % n : (i / 7) % n;
        const size_t count = 1 + static_cast<size_t>(i * 37) % 1000;  // one chunk
        if (ctx.rank == (i / 50) % n && i % 5 == 0) std::this_thread::sleep_for(1ms);
        checkBroadcast(ctx, shm, count, DataType::kFloat32, root, true, 1 << 20,
                       static_cast<size_t>(i) + 1);
        if (i % 50 == 49) {
          checkAllReduce(ctx, algorithm(K::kAllReduce, "recursive_doubling"),
                         {13, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
        }
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Broadcast, ShmRunAhead, ::testing::Values("arena", "arena_eager"));

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
        return rank == 0 ? algorithm(K::kAllReduce, "arena_direct")
                         : algorithm(K::kBarrier, "arena");
      });
}

}  // namespace
}  // namespace smddp::algo::testing
