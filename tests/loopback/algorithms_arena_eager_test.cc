// SPDX-License-Identifier: Apache-2.0
// The eager broadcast (arena_eager) through the arena's ring, over a heap arena shared by
// thread-ranks (100-byte test entries, so most cases run several ring uses): a root runs the
// ring's whole depth ahead of peers that have not entered yet; ranks that disagree on the root
// fail on the roots, naming the broadcast, by their next collective off the ring (earlier when
// the peers' identities are there as they wait in the ring); a receiver whose size differs
// fails at once, and the root as it settles.
// Data correctness over every dtype, count and world size is in algorithms_broadcast_test.cc.
#include <gtest/gtest.h>

#include <atomic>
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

const Algorithm& eager() { return algorithm(K::kBroadcast, "arena_eager"); }

// The root finishes kEagerDepth one-entry broadcasts before any peer enters the first one; then
// the peers run them and get every call's data. With a shallower ring (or the two slots) the
// root would wait for its peers, which wait for it: both sides time out instead. A further call
// (the ring wraps: the root must wait until its peers drained the first entry) and a collective
// off the ring (which settles the root's 64 pending checks) follow.
TEST(ShmEager, RootRunsTheRingsDepthAhead) {
  constexpr int kCalls = static_cast<int>(arena::Segment::kEagerDepth);
  for (int n : {2, 3, 5}) {
    std::atomic<bool> rootDone{false};
    runRanks(n, [&](RankContext& ctx) {
      if (ctx.rank != 1) {
        const auto deadline = std::chrono::steady_clock::now() + 20s;
        while (!rootDone.load() && std::chrono::steady_clock::now() < deadline) {
          std::this_thread::sleep_for(1ms);
        }
        if (!rootDone.load()) ctx.fail("the root did not finish its broadcasts alone");
      }
      for (int i = 0; i < kCalls; ++i) {
        checkBroadcast(ctx, eager(), 20, DataType::kFloat32, 1, true, 1 << 20,
                       static_cast<size_t>(i) + 1);
      }
      if (ctx.rank == 1) rootDone.store(true);
      checkBroadcast(ctx, eager(), 20, DataType::kFloat32, 1, false, 1 << 20, kCalls + 1);
      checkAllReduce(ctx, algorithm(K::kAllReduce, "recursive_doubling"),
                     {13, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
    });
  }
}

// Ranks 0 and 2 each believe they are the root; rank 1 follows rank 2, which agrees with it.
// Both roots return from the broadcast. Each fails, naming it, either in its next broadcast (from
// rank 1, agreed), if its peers' identities are there when it first waits in the ring, or at
// the latest before the barrier after it, off the ring. Rank 1 completes both broadcasts.
TEST(ShmEager, DifferentRootsFailOnTheRootsByTheirNextCollectiveOffTheRing) {
  runRanks(3, [&](RankContext& ctx) {
    std::vector<float> buf(16, static_cast<float>(ctx.rank));
    ctx.run(eager(), broadcastArgs(buf, 16, ctx.rank == 0 ? 0 : 2), 1 << 20);
    try {
      ctx.run(eager(), broadcastArgs(buf, 16, 1), 1 << 20);
    } catch (const Error& e) {  // a root that found its peers' identities in the ring
      if (ctx.rank == 1 || !namesMismatch(e, "broadcast #0", "broadcast #1")) {
        ctx.fail(std::string("wrong error: ") + e.what());
      }
      return;
    }
    if (ctx.rank == 1) return;
    expectBarrierMismatch(ctx, "dissemination", "broadcast #0", "barrier #2");
  });
}

// The same disagreement, followed by a collective off the ring (a message-based barrier): the
// roots settle their checks before it starts and fail; rank 1 never reaches it.
TEST(ShmEager, DifferentRootsFailOnTheRootsBeforeACollectiveOffTheRing) {
  runRanks(3, [&](RankContext& ctx) {
    std::vector<float> buf(16, static_cast<float>(ctx.rank));
    ctx.run(eager(), broadcastArgs(buf, 16, ctx.rank == 0 ? 0 : 2), 1 << 20);
    if (ctx.rank == 1) return;  // it agreed with its root: nothing failed here
    expectBarrierMismatch(ctx, "dissemination", "broadcast #0", "barrier #1");
  });
}

// A receiver that asks for another size fails as it reads the root's entry; the root returns
// and fails as its next collective settles the check.
TEST(ShmEager, DifferentSizesFailOnTheReceiverAtOnceAndOnTheRootLater) {
  runRanks(2, [&](RankContext& ctx) {
    std::vector<float> buf(40, 1.0f);
    try {
      ctx.run(eager(), broadcastArgs(buf, ctx.rank == 0 ? 30 : 40, 0), 1 << 20);
      if (ctx.rank == 1) ctx.fail("the receiver read a broadcast of another size");
    } catch (const Error& e) {
      if (ctx.rank == 0 || e.code() != ErrorCode::kMismatch) {
        ctx.fail(std::string("wrong error: ") + e.what());
      }
      return;
    }
    expectBarrierMismatch(ctx, "arena", "broadcast #0", "barrier #1");
  });
}

}  // namespace
}  // namespace smddp::algo::testing
