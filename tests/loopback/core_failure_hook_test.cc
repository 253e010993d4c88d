// SPDX-License-Identifier: Apache-2.0
// What a communicator tells the layer above when it fails (what torch's abort hooks and
// getError are built on): the failure hook runs exactly once, with the first error's code, before
// the waiter of the failed collective sees the error, and not for abort(); abort(reason) names
// the reason in the pending collective's error, in later ones and in brokenReason().
#include <atomic>
#include <chrono>
#include <mutex>
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

// Counts the hook's calls per rank and keeps the last code and reason.
struct HookLog {
  std::mutex mutex;
  std::vector<int> calls;
  std::vector<ErrorCode> codes;
  std::vector<std::string> reasons;
  explicit HookLog(size_t n) : calls(n, 0), codes(n, ErrorCode::kInternal), reasons(n) {}
  template <class Comms>
  void attach(Comms& comms) {
    for (size_t r = 0; r < comms.size(); ++r) {
      comms[r]->setFailureHook([this, r](ErrorCode code, const std::string& reason) {
        std::lock_guard<std::mutex> lock(mutex);
        ++calls[r];
        codes[r] = code;
        reasons[r] = reason;
      });
    }
  }
  int callsOf(int r) {
    std::lock_guard<std::mutex> lock(mutex);
    return calls[static_cast<size_t>(r)];
  }
};

TEST(CoreFailureHook, RunsOnceOnATimeoutBeforeTheWaiterSeesIt) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = makeLoopbackGroup(3, opts);
  HookLog log(3);
  log.attach(comms);
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 2) return;  // never joins: ranks 0 and 1 time out
    std::vector<float> a(16, 1.f);
    const Buffer b(a.data(), a.size(), DataType::kFloat32);
    expectError([&] { c.allReduce(b, b, ReduceOp::kSum).wait(); }, ErrorCode::kTimeout);
    EXPECT_EQ(log.callsOf(rank), 1) << "rank " << rank << ": the hook ran before the error";
    EXPECT_EQ(c.brokenCode(), ErrorCode::kTimeout);
    // Later collectives fail as broken; the hook does not run again.
    expectError([&] { c.barrier().wait(); }, ErrorCode::kBroken);
    expectError([&] { c.allReduce(b, b, ReduceOp::kSum).wait(); }, ErrorCode::kBroken);
    EXPECT_EQ(log.callsOf(rank), 1) << "rank " << rank;
  });
  EXPECT_EQ(log.callsOf(2), 0);
  EXPECT_EQ(log.codes[0], ErrorCode::kTimeout);
  EXPECT_NE(log.reasons[0].find("all_reduce #0"), std::string::npos) << log.reasons[0];
}

TEST(CoreFailureHook, RunsOnceOnALostPeer) {
  Options opts;
  opts.timeout = 60s;
  std::shared_ptr<transport::LoopbackFabric> fabric;
  auto comms = makeLoopbackGroup(3, opts, &fabric);
  HookLog log(3);
  log.attach(comms);
  fabric->kill(1);
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 1) return;
    expectError([&] { c.barrier().wait(); }, ErrorCode::kPeerFailure);
    expectError([&] { c.barrier().wait(); }, ErrorCode::kBroken);
    EXPECT_EQ(log.callsOf(rank), 1) << "rank " << rank;
    EXPECT_EQ(c.brokenCode(), ErrorCode::kPeerFailure);
  });
  EXPECT_EQ(log.codes[0], ErrorCode::kPeerFailure);
  EXPECT_NE(log.reasons[2].find("rank 1"), std::string::npos) << log.reasons[2];
}

TEST(CoreFailureHook, AbortNamesItsReasonAndRunsNoHook) {
  Options opts;
  opts.timeout = 60s;
  auto comms = makeLoopbackGroup(2, opts);
  HookLog log(2);
  log.attach(comms);
  auto& c = *comms[0];
  EXPECT_TRUE(c.brokenReason().empty());
  auto pending = c.barrier();  // rank 1 never joins: it runs until aborted
  std::thread aborter([&] {
    std::this_thread::sleep_for(100ms);
    c.abort("replaced by generation 7");
  });
  auto msg = expectError([&] { pending.wait(); }, ErrorCode::kAborted);
  aborter.join();
  EXPECT_NE(msg.find("barrier #0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("aborted: replaced by generation 7"), std::string::npos) << msg;
  msg = expectError([&] { c.barrier().wait(); }, ErrorCode::kAborted);
  EXPECT_NE(msg.find("barrier #1 not run: aborted: replaced by generation 7"), std::string::npos)
      << msg;
  EXPECT_EQ(c.brokenCode(), ErrorCode::kAborted);
  EXPECT_NE(c.brokenReason().find("replaced by generation 7"), std::string::npos)
      << c.brokenReason();
  // A second abort keeps the first reason.
  c.abort("something else");
  msg = expectError([&] { c.barrier().wait(); }, ErrorCode::kAborted);
  EXPECT_NE(msg.find("replaced by generation 7"), std::string::npos) << msg;
  EXPECT_EQ(log.callsOf(0), 0);
  EXPECT_EQ(log.callsOf(1), 0);
}

TEST(CoreFailureHook, PlainAbortSaysTheApplicationCalledIt) {
  auto comms = makeLoopbackGroup(2);
  comms[0]->abort();
  auto msg = expectError([&] { comms[0]->barrier().wait(); }, ErrorCode::kAborted);
  EXPECT_NE(msg.find("aborted: abort() called by the application"), std::string::npos) << msg;
}

}  // namespace
}  // namespace smddp
