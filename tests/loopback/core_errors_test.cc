// SPDX-License-Identifier: Apache-2.0
// Errors through the public API: bad arguments fail at once with a message naming rank, collective
// and argument, and leave the communicator usable; a rank that never joins makes the others time
// out naming it; after that the communicator is broken and says why; abort() ends waits.
#include <chrono>
#include <thread>
#include <vector>

#include "loopback_group.h"
#include "smddp/error.h"

namespace smddp {
namespace {

using testing::expectError;
using testing::makeLoopbackGroup;
using testing::runRanks;
using namespace std::chrono_literals;

TEST(CoreErrors, BadArgumentsNameTheProblemAndLeaveTheCommunicatorUsable) {
  auto comms = makeLoopbackGroup(3);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<float> a(8, 1.f), b(8, 0.f), big(24, 0.f);
    std::vector<int32_t> ints(8, 1);
    const auto F = DataType::kFloat32;
    auto msg = expectError([&] { c.allReduce(Buffer(nullptr, 8, F), Buffer(b.data(), 8, F), ReduceOp::kSum); },
                           ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("rank " + std::to_string(rank) + "/3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
    EXPECT_NE(msg.find("null pointer"), std::string::npos) << msg;
    msg = expectError([&] { c.allReduce(Buffer(a.data(), 8, F), Buffer(b.data(), 7, F), ReduceOp::kSum); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("differ in size"), std::string::npos) << msg;
    msg = expectError([&] { c.broadcast(Buffer(a.data(), 8, F), Buffer(a.data(), 8, F), 3); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("root 3 is out of range [0, 3)"), std::string::npos) << msg;
    msg = expectError([&] { c.allReduce(Buffer(a.data(), 8, F), Buffer(a.data(), 8, F), ReduceOp::kBxor); },
                      ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("bxor"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
    EXPECT_NE(msg.find("integer or bool"), std::string::npos) << msg;
    msg = expectError([&] { c.allReduce(Buffer(big.data(), 8, F), Buffer(big.data() + 4, 8, F), ReduceOp::kSum); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("overlap"), std::string::npos) << msg;
    msg = expectError([&] { c.allGather(Buffer(a.data(), 8, F), Buffer(big.data(), 23, F)); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("all_gather"), std::string::npos) << msg;
    msg = expectError([&] { c.allGather(Buffer(a.data(), 8, F), Buffer(b.data(), 8, DataType::kInt32)); },
                      ErrorCode::kInvalidArgument);
    msg = expectError(
        [&] { c.reduceScatter(Buffer(big.data(), 24, F), Buffer(a.data(), 7, F), ReduceOp::kSum); },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("reduce_scatter"), std::string::npos) << msg;
    EXPECT_NE(msg.find("size x recv count = 3 x 7"), std::string::npos) << msg;
    msg = expectError(
        [&] {
          c.reduceScatter(Buffer(big.data(), 24, F), Buffer(big.data() + 1, 8, F), ReduceOp::kSum);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("not this rank's block"), std::string::npos) << msg;
    msg = expectError(
        [&] {
          c.reduceScatter(Buffer(ints.data(), 6, DataType::kBool),
                          Buffer(ints.data() + 6, 2, DataType::kBool), ReduceOp::kAvg);
        },
        ErrorCode::kUnsupported);
    EXPECT_NE(msg.find("reduce_scatter: op avg"), std::string::npos) << msg;
    msg = expectError(
        [&] { c.reduce(Buffer(a.data(), 8, F), Buffer(b.data(), 8, F), ReduceOp::kSum, -1); },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("reduce: root -1 is out of range [0, 3)"), std::string::npos) << msg;
    if (rank == 1) {  // the root's output is checked; the others' is not used
      msg = expectError(
          [&] { c.reduce(Buffer(a.data(), 8, F), Buffer(b.data(), 7, F), ReduceOp::kSum, 1); },
          ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("differ in size"), std::string::npos) << msg;
    }
    if (rank == 0) {  // the root's output is checked (elsewhere it is not used)
      msg = expectError([&] { c.gather(Buffer(a.data(), 8, F), Buffer(big.data(), 23, F), 0); },
                        ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("gather: recv (float32 x 23) must hold size x send count"),
                std::string::npos)
          << msg;
    }
    msg = expectError([&] { c.scatter(Buffer(big.data(), 24, F), Buffer(a.data(), 8, F), 3); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("scatter: root 3 is out of range"), std::string::npos) << msg;
    if (rank == 2) {  // the list forms, checked on the root
      const std::vector<Buffer> two{Buffer(big.data(), 8, F), Buffer(big.data() + 8, 8, F)};
      msg = expectError([&] { c.gather(Buffer(a.data(), 8, F), two, 2); },
                        ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("rank 2/3"), std::string::npos) << msg;
      EXPECT_NE(msg.find("gather: got 2 output buffers for 3 ranks"), std::string::npos) << msg;
      const std::vector<Buffer> crossed{Buffer(big.data(), 8, F), Buffer(big.data() + 4, 8, F),
                                        Buffer(big.data() + 16, 8, F)};
      msg = expectError([&] { c.gather(Buffer(a.data(), 8, F), crossed, 2); },
                        ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("gather: output 0 and output 1 overlap"), std::string::npos) << msg;
      const std::vector<Buffer> shorter{Buffer(big.data(), 8, F), Buffer(big.data() + 8, 7, F),
                                        Buffer(big.data() + 16, 8, F)};
      msg = expectError([&] { c.scatter(shorter, Buffer(a.data(), 8, F), 2); },
                        ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("scatter: input 1 (float32 x 7) differs in size from recv (float32 x 8)"),
                std::string::npos)
          << msg;
      const std::vector<Buffer> intoRecv{Buffer(big.data(), 8, F), Buffer(big.data() + 8, 8, F),
                                         Buffer(big.data() + 16, 8, F)};
      msg = expectError([&] { c.scatter(intoRecv, Buffer(big.data() + 4, 8, F), 2); },
                        ErrorCode::kInvalidArgument);
      EXPECT_NE(msg.find("scatter: recv overlaps input 0"), std::string::npos) << msg;
    }
    msg = expectError([&] { c.allToAll(Buffer(big.data(), 24, F), Buffer(b.data(), 8, F)); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(
        msg.find("all_to_all: send (float32 x 24) and recv (float32 x 8) must have one count"),
        std::string::npos)
        << msg;
    msg = expectError([&] { c.allToAll(Buffer(big.data(), 6, F), Buffer(big.data() + 3, 6, F)); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("send and recv overlap"), std::string::npos) << msg;
    const std::vector<size_t> ones{1, 1, 1}, at{0, 1, 2}, late{0, 1, 8};
    msg = expectError(
        [&] { c.allToAllV(Buffer(a.data(), 8, F), ones, late, Buffer(b.data(), 8, F), ones, at); },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("all_to_allv: send piece 2 [8, +1) lies outside send (float32 x 8)"),
              std::string::npos)
        << msg;
    msg = expectError(
        [&] {
          c.allToAllV(Buffer(a.data(), 8, F), ones, at, Buffer(b.data(), 8, F), ones, {0, 1, 1});
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("recv piece 1 and recv piece 2 overlap"), std::string::npos) << msg;
    msg = expectError(
        [&] {
          c.allToAllV(Buffer(a.data(), 8, F), ones, at, Buffer(a.data(), 8, F), ones, {2, 3, 4});
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("overlap (outputs must not share memory)"), std::string::npos) << msg;
    std::vector<size_t> mineTwice = ones;
    mineTwice[static_cast<size_t>(rank)] = 2;
    msg = expectError(
        [&] {
          c.allToAllV(Buffer(a.data(), 8, F), mineTwice, at, Buffer(b.data(), 8, F), ones, at);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("this rank sends itself 2 elements but expects 1"), std::string::npos)
        << msg;
    msg = expectError([&] { c.allToAllV({Buffer(a.data(), 1, F)}, {Buffer(b.data(), 1, F)}); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("got 1 send and 1 recv pieces for 3 ranks"), std::string::npos) << msg;
    // Nothing was queued: the next collective gets sequence number 0 and works.
    auto req = c.allReduce(Buffer(a.data(), 8, F), Buffer(b.data(), 8, F), ReduceOp::kSum);
    EXPECT_EQ(req.sequence(), 0u);
    req.wait();
    for (float v : b) ASSERT_EQ(v, 3.f) << "rank " << rank;
    EXPECT_TRUE(c.brokenReason().empty());
  });
}

TEST(CoreErrors, MissingRankTimesOutNamingItThenCommunicatorIsBroken) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = makeLoopbackGroup(3, opts);
  // Ranks 0 and 1 call all_reduce; rank 2 never does.
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 2) return;
    std::vector<float> a(64, 1.f);
    const auto F = DataType::kFloat32;
    auto msg = expectError([&] { c.allReduce(Buffer(a.data(), 64, F), Buffer(a.data(), 64, F), ReduceOp::kSum).wait(); },
                           ErrorCode::kTimeout);
    EXPECT_NE(msg.find("all_reduce #0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Timed out after 300 ms"), std::string::npos) << msg;
    EXPECT_NE(msg.find("float32"), std::string::npos) << msg;
    // Each rank names the peers it waits for directly: rank 1 is the one paired with rank 2.
    EXPECT_NE(msg.find("waiting for data from rank"), std::string::npos) << msg;
    if (rank == 1) {
      EXPECT_NE(msg.find("rank 2"), std::string::npos) << msg;
    }
    EXPECT_FALSE(c.brokenReason().empty());
    msg = expectError([&] { c.barrier().wait(); }, ErrorCode::kBroken);
    EXPECT_NE(msg.find("barrier #1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Timed out"), std::string::npos) << "names the first error: " << msg;
  });
}

TEST(CoreErrors, AbortEndsAPendingWait) {
  Options opts;
  opts.timeout = 60s;
  auto comms = makeLoopbackGroup(2, opts);
  auto& c = *comms[0];
  auto req = c.barrier();  // rank 1 never joins
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);
    c.abort();
  });
  const auto start = std::chrono::steady_clock::now();
  auto msg = expectError([&] { req.wait(); }, ErrorCode::kAborted);
  aborter.join();
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
  EXPECT_NE(msg.find("aborted"), std::string::npos) << msg;
  expectError([&] { c.barrier().wait(); }, ErrorCode::kAborted);
}

TEST(CoreErrors, ShortWaitGivesUpButTheCollectiveGoesOn) {
  auto comms = makeLoopbackGroup(2);
  auto req = comms[0]->barrier();
  expectError([&] { req.wait(50ms); }, ErrorCode::kTimeout);
  EXPECT_FALSE(req.completed());
  auto other = comms[1]->barrier();
  other.wait();
  req.wait();
  EXPECT_TRUE(req.test());
}

TEST(CoreErrors, DeadPeerFailsPromptly) {
  Options opts;
  opts.timeout = 60s;
  std::shared_ptr<transport::LoopbackFabric> fabric;
  auto comms = makeLoopbackGroup(3, opts, &fabric);
  fabric->kill(2);
  const auto start = std::chrono::steady_clock::now();
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 2) return;
    auto msg = expectError([&] { c.barrier().wait(); }, ErrorCode::kPeerFailure);
    EXPECT_NE(msg.find("rank 2"), std::string::npos) << msg;
  });
  EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
}

// setTimeout bounds the collectives posted after it (both ways: shorter and longer than the
// communicator's), and rejects a non-positive bound with the communicator untouched.
TEST(CoreErrors, SetTimeoutBoundsTheCollectivesPostedAfterIt) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = makeLoopbackGroup(2, opts);
  auto& c = *comms[0];
  EXPECT_EQ(c.timeout(), 300ms);
  expectError([&] { c.setTimeout(0ms); }, ErrorCode::kInvalidArgument);
  expectError([&] { c.setTimeout(-5ms); }, ErrorCode::kInvalidArgument);
  EXPECT_EQ(c.timeout(), 300ms);
  EXPECT_TRUE(c.brokenReason().empty());
  // Longer than the original: rank 1 joins 1 s late, inside the new bound, not the old one.
  for (auto& comm : comms) comm->setTimeout(5s);
  runRanks(comms, [](int rank, Communicator& comm) {
    if (rank == 1) std::this_thread::sleep_for(1s);
    comm.barrier().wait();
  });
  // A collective posted before a shortening keeps its bound: rank 1 joins 1 s late again.
  auto early = c.barrier();
  c.setTimeout(250ms);
  std::this_thread::sleep_for(1s);
  comms[1]->barrier().wait();
  early.wait();
  // Shorter: rank 1 never joins; the barrier fails after ~250 ms, not 5 s.
  EXPECT_EQ(c.timeout(), 250ms);
  const auto start = std::chrono::steady_clock::now();
  auto msg = expectError([&] { c.barrier().wait(); }, ErrorCode::kTimeout);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_GE(took, 240ms);
  EXPECT_LT(took, 10s);
  EXPECT_NE(msg.find("Timed out after 250 ms"), std::string::npos) << msg;
}

}  // namespace
}  // namespace smddp
