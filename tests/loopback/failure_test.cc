// SPDX-License-Identifier: Apache-2.0
// Fault tests over the loopback transport with progress beacons in an in-memory store: a skipped
// collective times out naming the rank that has not entered it; mismatched collectives raise
// kMismatch on every rank naming both calls; a failure on one rank ends the collective on the
// others long before their own timeout; a stopped heartbeat names the dead rank; the flight
// recorder is dumped on a timeout; abort() still ends waits. Every test is bounded.
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "failure_group.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using testing::faultSettings;
using testing::makeWatchedGroup;
using testing::runRanks;

const auto F32 = DataType::kFloat32;

double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Runs fn; returns the Error it raised (code + text), failing the test when none was raised.
template <typename Fn>
std::pair<ErrorCode, std::string> raised(Fn fn) {
  try {
    fn();
  } catch (const Error& e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no error raised";
  return {ErrorCode::kInternal, ""};
}

void allReduce(Communicator& c, size_t n) {
  std::vector<float> a(n, 1.f);
  c.allReduce(Buffer(a.data(), n, F32), Buffer(a.data(), n, F32), ReduceOp::kSum).wait();
}

TEST(FailureLoopback, SkippedCollectiveTimesOutNamingTheRankThatHasNotEnteredIt) {
  auto g = makeWatchedGroup(3, faultSettings(1500ms));
  std::atomic<int> failed{0};
  const auto t0 = Clock::now();
  runRanks(g.comms, [&](int rank, Communicator& c) {
    allReduce(c, 64);  // #0 on every rank
    if (rank == 2) {   // skips #1; then learns of the failure before running anything else
      while (failed.load() < 2 && secondsSince(t0) < 20) std::this_thread::sleep_for(10ms);
      auto [code, msg] = raised([&] { allReduce(c, 64); });
      EXPECT_EQ(code, ErrorCode::kTimeout) << msg;
      EXPECT_NE(msg.find("failed"), std::string::npos) << msg;
      return;
    }
    auto [code, msg] = raised([&] { allReduce(c, 64); });
    ++failed;
    EXPECT_EQ(code, ErrorCode::kTimeout) << msg;
    EXPECT_NE(msg.find("all_reduce #1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 2 (loopback) has not entered it; last collective completed by "
                       "rank 2: #0"), std::string::npos) << msg;
    std::printf("rank %d: %s\n", rank, msg.c_str());
  });
  EXPECT_LT(secondsSince(t0), 10.0);
}

struct MismatchCase {
  const char* name;
  std::function<void(int rank, Communicator&)> call;  // rank 2 calls something else
  const char* mine;    // what ranks 0 and 1 called
  const char* theirs;  // what rank 2 called
};

void runMismatch(const MismatchCase& mc) {
  SCOPED_TRACE(mc.name);
  auto g = makeWatchedGroup(3, faultSettings(20000ms));
  const auto t0 = Clock::now();
  runRanks(g.comms, [&](int rank, Communicator& c) {
    allReduce(c, 16);  // #0 matches
    // A rank whose part of the mismatched collective could complete (a broadcast receiver fed by
    // the root it agrees with) learns of the mismatch at its next call.
    auto [code, msg] = raised([&] {
      mc.call(rank, c);
      c.barrier().wait();
    });
    EXPECT_EQ(code, ErrorCode::kMismatch) << msg;
    EXPECT_NE(msg.find(std::string("called ") + mc.mine), std::string::npos) << msg;
    EXPECT_NE(msg.find(std::string("rank 2 called ") + mc.theirs), std::string::npos) << msg;
    if (rank == 0) std::printf("%s: rank 0: %s\n", mc.name, msg.c_str());
  });
  EXPECT_LT(secondsSince(t0), 8.0) << "mismatch must be found long before the 20 s timeout";
}

TEST(FailureLoopback, MismatchedKindDtypeCountRootRaiseOnEveryRankNamingBothSides) {
  std::vector<float> buf(1024, 1.f);
  std::vector<uint16_t> half(1024, 0);
  auto ar = [&](Communicator& c, DataType t, void* p, size_t n) {
    c.allReduce(Buffer(p, n, t), Buffer(p, n, t), ReduceOp::kSum).wait();
  };
  auto bc = [&](Communicator& c, DataType t, void* p, size_t n, int root) {
    c.broadcast(Buffer(p, n, t), Buffer(p, n, t), root).wait();
  };
  const std::vector<MismatchCase> cases = {
      {"kind", [&](int r, Communicator& c) {
         if (r == 2) bc(c, DataType::kFloat16, half.data(), 512, 1);
         else ar(c, F32, buf.data(), 1024);
       }, "all_reduce(float32, 1024, sum)", "broadcast(float16, 512, root=1)"},
      {"dtype", [&](int r, Communicator& c) {
         if (r == 2) ar(c, DataType::kInt32, buf.data(), 1024);
         else ar(c, F32, buf.data(), 1024);
       }, "all_reduce(float32, 1024, sum)", "all_reduce(int32, 1024, sum)"},
      {"count", [&](int r, Communicator& c) { ar(c, F32, buf.data(), r == 2 ? 512 : 1024); },
       "all_reduce(float32, 1024, sum)", "all_reduce(float32, 512, sum)"},
      {"root", [&](int r, Communicator& c) { bc(c, F32, buf.data(), 256, r == 2 ? 1 : 0); },
       "broadcast(float32, 256, root=0)", "broadcast(float32, 256, root=1)"},
  };
  for (const auto& mc : cases) runMismatch(mc);
}

TEST(FailureLoopback, FailureOnOneRankEndsTheCollectiveOnTheOthersLongBeforeTheirTimeout) {
  // Rank 0 has a 300 ms timeout, rank 1 a 30 s one; rank 2 skips the collective.
  auto store = std::make_shared<testing::MemoryStore>();
  auto fabric = transport::LoopbackFabric::create(3);
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < 3; ++r) {
    comms.push_back(std::make_unique<Communicator>(std::make_unique<core::CommunicatorImpl>(
        fabric->endpoint(r), faultSettings(r == 0 ? 300ms : 30000ms), store, "test")));
  }
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 2) return;
    const auto t0 = Clock::now();
    auto [code, msg] = raised([&] { allReduce(c, 64); });
    EXPECT_EQ(code, ErrorCode::kTimeout) << msg;
    if (rank == 1) {
      EXPECT_LT(secondsSince(t0), 5.0) << "rank 1 must learn of rank 0's failure";
      EXPECT_NE(msg.find("ended because rank 0 (loopback) failed"), std::string::npos) << msg;
      std::printf("rank 1 after %.2f s: %s\n", secondsSince(t0), msg.c_str());
    }
  });
}

TEST(FailureLoopback, StoppedHeartbeatFailsPendingCollectivesNamingTheDeadRank) {
  auto g = makeWatchedGroup(3, faultSettings(60000ms));
  const auto t0 = Clock::now();
  runRanks(g.comms, [&](int rank, Communicator& c) {
    allReduce(c, 64);
    if (rank == 2) {  // "dies": its beacon stops and it never enters #1
      g.store->freezeBeacon(2);
      return;
    }
    auto [code, msg] = raised([&] { allReduce(c, 64); });
    EXPECT_EQ(code, ErrorCode::kPeerFailure) << msg;
    EXPECT_NE(msg.find("rank 2 (loopback) is gone"), std::string::npos) << msg;
    if (rank == 0) std::printf("rank 0 after %.2f s: %s\n", secondsSince(t0), msg.c_str());
  });
  EXPECT_LT(secondsSince(t0), 15.0) << "liveness, not the 60 s timeout, must end it";
}

TEST(FailureLoopback, FlightRecorderIsDumpedOnTimeout) {
  const std::string path = "/tmp/smddp_failure_dump." + std::to_string(::getpid());
  core::Settings s = faultSettings(500ms);
  s.watch.dumpPath = path;
  auto g = makeWatchedGroup(3, s);
  runRanks(g.comms, [&](int rank, Communicator& c) {
    allReduce(c, 64);
    if (rank != 2) raised([&] { allReduce(c, 32); });
  });
  std::ifstream in(path + ".0");
  ASSERT_TRUE(in.good()) << path << ".0 not written";
  std::stringstream text;
  text << in.rdbuf();
  const std::string dump = text.str();
  for (const char* want : {"smddp flight recorder: rank 0 of 3 (loopback", "error: smddp: rank 0",
                           "-- progress beacons, read now --", "rank 2 (loopback): heartbeat",
                           "#0  all_reduce(float32, 64, sum) [", "]  done",
                           "#1  all_reduce(float32, 32, sum) [", "]  failed", "error: "}) {
    EXPECT_NE(dump.find(want), std::string::npos) << "missing '" << want << "' in:\n" << dump;
  }
  std::printf("%s", dump.c_str());
  for (int r = 0; r < 3; ++r) std::remove((path + "." + std::to_string(r)).c_str());
}

TEST(FailureLoopback, AbortStillEndsPendingWaitsWithBeacons) {
  auto g = makeWatchedGroup(2, faultSettings(30000ms));
  std::vector<float> a(64, 1.f);
  auto req = g.comms[0]->allReduce(Buffer(a.data(), 64, F32), Buffer(a.data(), 64, F32),
                                   ReduceOp::kSum);
  std::thread aborter([&] {
    std::this_thread::sleep_for(200ms);
    g.comms[0]->abort();
  });
  auto [code, msg] = raised([&] { req.wait(); });
  aborter.join();
  EXPECT_EQ(code, ErrorCode::kAborted) << msg;
}

}  // namespace
}  // namespace smddp
