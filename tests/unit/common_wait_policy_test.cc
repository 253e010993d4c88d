// SPDX-License-Identifier: Apache-2.0
// WaitPolicy: the spin a wait gets from the measured cost of a yield (fixed, quiet, contended,
// oversubscribed), the long budget turned off when it stops paying and tried again, the pauses'
// yield/sleep mix, and a real contended CPU (a busy thread beside the waiter) seen as such.
#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include "common/threads.h"
#include "common/wait_policy.h"

namespace smddp::common {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using Nanos = WaitPolicy::Nanos;

void feedYields(WaitPolicy& p, Nanos each, int n) {
  for (int i = 0; i < n; ++i) p.noteYield(each);
}

// A contended CPU (3 ms per yield) leaves the spin at `spin`: no long spin is ever given.
void expectSpinHoldsUnderContention(WaitPolicy& p, Nanos spin) {
  feedYields(p, milliseconds(3), 60);
  EXPECT_TRUE(p.stats().contended);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(p.spinFor(), spin);
  EXPECT_EQ(p.stats().longSpins, 0U);
}

TEST(WaitPolicy, FixedSpinsWhatItWasToldWhateverTheLoad) {
  WaitPolicy p = WaitPolicy::fixed(microseconds(7));
  EXPECT_FALSE(p.adaptive());
  EXPECT_EQ(p.spinFor(), microseconds(7));
  expectSpinHoldsUnderContention(p, microseconds(7));
}

TEST(WaitPolicy, QuietCpuSpinsShort) {
  WaitPolicy p = WaitPolicy::adaptive(microseconds(20), false);
  EXPECT_EQ(p.spinFor(), microseconds(20));  // nothing measured yet: quiet
  feedYields(p, Nanos(600), 100);
  EXPECT_FALSE(p.stats().contended);
  EXPECT_EQ(p.spinFor(), microseconds(20));
  // One stray slow yield on a quiet core does not make it contended.
  p.noteYield(microseconds(100));
  EXPECT_FALSE(p.stats().contended);
  EXPECT_EQ(p.stats().yields, 101U);
  EXPECT_EQ(p.stats().slowYields, 1U);
}

TEST(WaitPolicy, ContendedCpuSpinsAboutAsLongAsAYieldCosts) {
  WaitPolicy p = WaitPolicy::adaptive(microseconds(20), false);
  feedYields(p, milliseconds(2), 60);
  ASSERT_TRUE(p.stats().contended);
  const Nanos spin = p.spinFor();
  EXPECT_GE(spin, WaitPolicy::kMinLong);
  EXPECT_LE(spin, WaitPolicy::kMaxLong);
  EXPECT_GE(spin, milliseconds(1));  // ~2 ms per yield
  EXPECT_EQ(p.stats().longSpins, 1U);
  // The long budget is capped: a yield costing 50 ms does not make a 50 ms spin.
  feedYields(p, milliseconds(50), 60);
  EXPECT_EQ(p.spinFor(), WaitPolicy::kMaxLong);
}

TEST(WaitPolicy, OversubscribedRanksNeverSpinLong) {
  WaitPolicy p = WaitPolicy::adaptive(Nanos(0), true);
  expectSpinHoldsUnderContention(p, Nanos(0));
}

TEST(WaitPolicy, LongSpinsThatDoNotPayStopAndAreTriedAgain) {
  WaitPolicy p = WaitPolicy::adaptive(microseconds(20), false);
  feedYields(p, milliseconds(1), 60);
  const Nanos longSpin = p.spinFor();
  ASSERT_GT(longSpin, microseconds(20));
  // Long spins that ran out, the awaited coming within a few spins (the scheduler kept the peer
  // off its CPU): they still pay, staying on the CPU.
  for (int i = 0; i < 64; ++i) p.ended(3 * longSpin, longSpin);
  EXPECT_TRUE(p.stats().longMode);
  // 32 long spins whose awaited came far later (the peer was computing): the long budget goes.
  for (int i = 0; i < 32; ++i) p.ended(20 * longSpin, longSpin);
  EXPECT_FALSE(p.stats().longMode);
  int longs = 0;
  for (int i = 0; i < 64; ++i) longs += p.spinFor() > microseconds(20) ? 1 : 0;
  EXPECT_EQ(longs, 8);  // every 8th wait explores
  // Waits ending within the short spin teach nothing either way.
  for (int i = 0; i < 100; ++i) p.ended(microseconds(5), longSpin);
  EXPECT_FALSE(p.stats().longMode);
  // Explored long spins that pay bring it back.
  for (int i = 0; i < 32; ++i) p.ended(microseconds(300), longSpin);
  EXPECT_TRUE(p.stats().longMode);
  EXPECT_GT(p.spinFor(), microseconds(20));
}

TEST(WaitPolicy, PausesYieldFirstThenSleepNowAndThen) {
  WaitPolicy p = WaitPolicy::fixed(Nanos(0));
  int polls = 0;
  for (int i = 0; i < 16; ++i) p.pause(milliseconds(1), polls);  // young waits only yield
  EXPECT_EQ(p.stats().yields, 16U);
  EXPECT_EQ(p.stats().sleeps, 0U);
  polls = 0;
  for (int i = 0; i < 16; ++i) p.pause(milliseconds(60), polls);  // past 50 ms: every 8th sleeps
  EXPECT_EQ(p.stats().sleeps, 2U);
  EXPECT_EQ(p.stats().yields, 30U);
  polls = 0;
  for (int i = 0; i < 5; ++i) p.pause(milliseconds(3), polls, {milliseconds(2), 1});
  EXPECT_EQ(p.stats().sleeps, 7U);  // a send or recv past 2 ms sleeps on every pause
}

TEST(WaitPolicy, SeesABusyThreadOnItsCpuAsContended) {
  // The waiter and a busy thread pinned to one CPU: every yield hands the CPU over for a time
  // slice (ms), so the estimate crosses kContended within a few yields.
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(sched_getcpu(), &one);
  cpu_set_t before;
  ASSERT_EQ(pthread_getaffinity_np(pthread_self(), sizeof(before), &before), 0);
  ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  WaitPolicy p = WaitPolicy::adaptive(microseconds(20), false);
  int polls = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!p.stats().contended && std::chrono::steady_clock::now() < deadline) {
    p.pause(milliseconds(1), polls);
  }
  stop = true;
  busy.join();
  pthread_setaffinity_np(pthread_self(), sizeof(before), &before);
  EXPECT_TRUE(p.stats().contended) << p.stats().yieldNs << " ns per yield";
  EXPECT_GT(p.stats().slowYields, 0U);
  EXPECT_GT(p.spinFor(), microseconds(20));
}

TEST(Threads, TaskStateFollowsTheLastParenthesis) {
  EXPECT_EQ(taskState("1234 (python3) R 1 2 3"), 'R');
  EXPECT_EQ(taskState("77 (a) b (c)) S 1 2"), 'S');  // a command name with ") "
  EXPECT_EQ(taskState("5 (x)"), '?');
  EXPECT_EQ(taskState("garbage"), '?');
}

// A busy thread beside the caller is counted; once it stops it is not.
TEST(Threads, CountsARunnableSibling) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  int seen = 0;
  for (int i = 0; i < 50 && seen == 0; ++i) {
    seen = runnableOtherThreads();
    std::this_thread::sleep_for(milliseconds(2));
  }
  stop = true;
  busy.join();
  EXPECT_GE(seen, 1);
  EXPECT_EQ(runnableOtherThreads(), 0);  // gtest runs no other thread
}

// Contended by its own process's threads (compute beside communication): short spins and sleeps,
// no yields; with the compute gone it yields again.
TEST(WaitPolicy, SleepsWhileItsOwnThreadsWantTheCpu) {
  WaitPolicy p = WaitPolicy::adaptive(microseconds(20), false);
  feedYields(p, milliseconds(2), 60);
  std::atomic<bool> stop{false};
  std::thread compute([&] {
    while (!stop.load(std::memory_order_relaxed)) {
    }
  });
  std::this_thread::sleep_for(milliseconds(5));
  int polls = 0;
  const uint64_t yields = p.stats().yields;
  for (int i = 0; i < 5; ++i) p.pause(milliseconds(1), polls);
  EXPECT_TRUE(p.stats().crowded);
  EXPECT_EQ(p.stats().yields, yields);
  EXPECT_EQ(p.stats().sleeps, 5U);
  EXPECT_EQ(polls, 5);  // the naps doubled: 20, 40, 80, 160, 320 us
  EXPECT_EQ(p.spinFor(), microseconds(20));
  stop = true;
  compute.join();
  std::this_thread::sleep_for(milliseconds(25));  // the next look is due
  p.pause(milliseconds(1), polls);
  EXPECT_FALSE(p.stats().crowded);
  EXPECT_EQ(p.stats().yields, yields + 1);
}

}  // namespace
}  // namespace smddp::common
