// SPDX-License-Identifier: Apache-2.0
// Engine, directly: each submitted request runs exactly once and in submission order, whoever
// runs it (a waiting caller on the lock-free or the locked path, or the engine thread), also when
// several callers wait on it or wait again after it is done, and when blocking callers run their
// own collectives (enterDirect) between queued ones.
#include "core/engine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <mutex>
#include <thread>
#include <vector>

namespace smddp::core {
namespace {

using std::chrono::milliseconds;

// Counts runs per request (by sequence number) and records the order.
struct Recorder {
  std::mutex mutex;
  std::vector<uint64_t> order;
  std::vector<int> runs = std::vector<int>(4096, 0);
  uint64_t nextSeq = 0;
};

std::shared_ptr<Engine> startEngine(Recorder& rec) {
  return Engine::start(
      [&rec](RequestState& r) {
        {
          std::lock_guard<std::mutex> lock(rec.mutex);
          rec.order.push_back(r.desc.seq);
          ++rec.runs.at(r.desc.seq);
        }
        r.complete(nullptr);
      },
      [&rec](RequestState& r) { r.desc.seq = rec.nextSeq++; }, milliseconds(1000));
}

std::shared_ptr<RequestState> submit(Engine& engine) {
  auto r = std::make_shared<RequestState>();
  r->engine = &engine;
  engine.submit(r);
  return r;
}

bool waitQueued(Engine& engine, RequestState& r) {
  milliseconds bound{0};
  return engine.waitQueued(r, milliseconds(5000), &bound);
}

TEST(Engine, WaitingAgainOnADoneRequestDoesNotRunItAgain) {
  Recorder rec;
  auto engine = startEngine(rec);
  for (int k = 0; k < 100; ++k) {
    auto r = submit(*engine);
    ASSERT_TRUE(waitQueued(*engine, *r));
    ASSERT_TRUE(waitQueued(*engine, *r));  // the claimed request is still the queue's front
    ASSERT_TRUE(engine->waitFor(*r, milliseconds(5000)));
  }
  engine->stop();
  for (int k = 0; k < 100; ++k) EXPECT_EQ(rec.runs[static_cast<size_t>(k)], 1) << "request " << k;
}

TEST(Engine, ConcurrentWaitersRunEachRequestOnceInOrder) {
  Recorder rec;
  auto engine = startEngine(rec);
  constexpr int kRounds = 40;
  constexpr int kPerRound = 25;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<std::shared_ptr<RequestState>> reqs;
    for (int k = 0; k < kPerRound; ++k) reqs.push_back(submit(*engine));
    auto waitIn = [&](int first, int step) {
      for (int i = 0; i < kPerRound; ++i) {
        auto& r = reqs[static_cast<size_t>((first + i * step) % kPerRound)];
        EXPECT_TRUE(waitQueued(*engine, *r));
        EXPECT_TRUE(r->done());
      }
    };
    std::thread a(waitIn, 0, 1), b(waitIn, kPerRound - 1, kPerRound - 1), c(waitIn, 3, 7);
    waitIn(0, 1);
    a.join();
    b.join();
    c.join();
  }
  engine->stop();
  const size_t total = kRounds * kPerRound;
  ASSERT_EQ(rec.order.size(), total);
  for (size_t i = 0; i < total; ++i) {
    EXPECT_EQ(rec.order[i], i) << "run " << i;
    EXPECT_EQ(rec.runs[i], 1) << "request " << i;
  }
}

TEST(Engine, ARequestNobodyWaitsForStillRuns) {
  Recorder rec;
  auto engine = startEngine(rec);
  for (int k = 0; k < 50; ++k) {  // synchronous use first: the thread backs off its polls
    auto r = submit(*engine);
    ASSERT_TRUE(waitQueued(*engine, *r));
  }
  auto lone = submit(*engine);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!lone->done() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_TRUE(lone->done());
  engine->stop();
  EXPECT_EQ(rec.runs[50], 1);
}

// A direct run as CommunicatorImpl::runBlocking makes one: the sequence number under the lock,
// the run recorded as the engine's runner records it. Returns false when the engine declined.
bool runDirect(Engine& engine, Recorder& rec) {
  uint64_t seq = 0;
  if (!engine.enterDirect([&] { seq = rec.nextSeq++; })) return false;
  {
    std::lock_guard<std::mutex> lock(rec.mutex);
    rec.order.push_back(seq);
    ++rec.runs.at(seq);
  }
  engine.leaveDirect();
  return true;
}

TEST(Engine, DirectRunsAreDeclinedWhileAnotherRunsAndSurviveAThrowingDescribe) {
  Recorder rec;
  auto engine = startEngine(rec);
  ASSERT_TRUE(engine->enterDirect([] {}));
  EXPECT_FALSE(engine->enterDirect([] {})) << "one runner at a time";
  engine->leaveDirect();
  EXPECT_THROW(engine->enterDirect([] { throw std::runtime_error("selection failed"); }),
               std::runtime_error);
  ASSERT_TRUE(runDirect(*engine, rec)) << "a throwing describe left busy_ taken";
  auto r = submit(*engine);
  ASSERT_TRUE(waitQueued(*engine, *r));
  engine->stop();
  EXPECT_FALSE(engine->enterDirect([] {})) << "a stopped engine runs nothing";
  ASSERT_EQ(rec.order, (std::vector<uint64_t>{0, 1}));
}

// While a request is queued or running, a direct run is declined; once it is done, taken again.
TEST(Engine, DirectRunsAreDeclinedWhileARequestIsQueuedOrRunning) {
  std::atomic<bool> running{false}, release{false};
  auto engine = Engine::start(
      [&](RequestState& r) {
        running = true;
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
        while (!release && std::chrono::steady_clock::now() < until) std::this_thread::yield();
        r.complete(nullptr);
      },
      [](RequestState&) {}, milliseconds(1000));
  auto r = std::make_shared<RequestState>();
  r->engine = engine.get();
  engine->submit(r);
  EXPECT_FALSE(engine->enterDirect([] {})) << "declined while the request is queued";
  // Nobody waits: the engine thread takes it after its grace and runs it until released.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!running && std::chrono::steady_clock::now() < until) std::this_thread::yield();
  ASSERT_TRUE(running.load()) << "the engine thread never ran the request";
  EXPECT_FALSE(engine->enterDirect([] {})) << "declined while the request runs";
  release = true;
  ASSERT_TRUE(engine->waitFor(*r, milliseconds(5000)));
  bool entered = false;  // the thread gives busy_ back just after the completion: retry, bounded
  for (int k = 0; k < 5000 && !(entered = engine->enterDirect([] {})); ++k) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  EXPECT_TRUE(entered) << "never taken again after the request completed";
  if (entered) engine->leaveDirect();
  engine->stop();
}

// One thread alternates direct runs with posted requests it waits for; another posts requests
// nobody waits for (the engine thread runs them) and waits for them later. Every collective runs
// once, in sequence order: a direct run starts only when nothing is queued or running.
TEST(Engine, DirectRunsInterleaveWithQueuedRequestsInOrder) {
  Recorder rec;
  auto engine = startEngine(rec);
  constexpr int kEach = 1000;
  std::atomic<int> declined{0};
  std::thread poster([&] {
    std::vector<std::shared_ptr<RequestState>> reqs;
    for (int k = 0; k < kEach; ++k) {
      reqs.push_back(submit(*engine));
      if (k % 16 == 15) std::this_thread::sleep_for(std::chrono::microseconds(150));
    }
    for (auto& r : reqs) EXPECT_TRUE(waitQueued(*engine, *r));
  });
  for (int k = 0; k < kEach; ++k) {
    if (!runDirect(*engine, rec)) {
      declined.fetch_add(1);
      auto r = submit(*engine);  // as runBlocking falls back: post, then wait
      if (!waitQueued(*engine, *r)) {
        ADD_FAILURE() << "fallback request " << k << " did not complete";
        break;
      }
    }
  }
  poster.join();
  engine->stop();
  const size_t total = 2 * kEach;
  ASSERT_EQ(rec.order.size(), total);
  for (size_t i = 0; i < total; ++i) {
    EXPECT_EQ(rec.order[i], i) << "run " << i;
    EXPECT_EQ(rec.runs[i], 1) << "request " << i;
  }
  RecordProperty("declined", declined.load());
}

}  // namespace
}  // namespace smddp::core
