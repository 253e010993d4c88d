// SPDX-License-Identifier: Apache-2.0
// WaitPolicy implementation: the yield-cost estimate, the long budget's worth, and the pauses.
#include "common/wait_policy.h"

#include <sched.h>
#include <time.h>

#include <algorithm>

#include "common/threads.h"

namespace smddp::common {
namespace {

using Clock = std::chrono::steady_clock;

// Long spins judged per window: the long budget stays while it paid in at least half of them.
constexpr uint32_t kWindow = 32;
// While the long budget is off, every kExplore-th wait tries it, so that its worth stays known.
constexpr uint32_t kExplore = 8;
// A long spin pays when the awaited arrives within this many spins' time (a few time slices).
constexpr int kPaysWithin = 4;
// While contended, a pausing waiter looks this often whether its own process's other threads
// want the CPU (a /proc walk, ~5 us per thread).
constexpr std::chrono::milliseconds kLookEvery{20};
// A crowded waiter's naps double from 20 us this many times (to 640 us).
constexpr int kMaxNapDoublings = 5;

int64_t sinceEpochNs(Clock::time_point t) {
  return std::chrono::duration_cast<WaitPolicy::Nanos>(t.time_since_epoch()).count();
}
}  // namespace

WaitPolicy::WaitPolicy(Nanos shortSpin, bool adaptive, bool stretch)
    : short_(std::max(shortSpin, Nanos(0))), adaptive_(adaptive), stretch_(adaptive && stretch) {}

bool WaitPolicy::contended() const {
  return yieldNs_.load(std::memory_order_relaxed) >= kContended.count();
}

WaitPolicy::Nanos WaitPolicy::longSpin() const {
  return std::clamp(Nanos(yieldNs_.load(std::memory_order_relaxed)), kMinLong, kMaxLong);
}

void WaitPolicy::noteYield(Nanos took) {
  // An exponentially weighted mean (1/8 per sample): a few slow yields in a row make the CPU
  // contended; one stray slow yield on a quiet core does not.
  const int64_t old = yieldNs_.load(std::memory_order_relaxed);
  yieldNs_.store(old + (took.count() - old) / 8, std::memory_order_relaxed);
  yields_.fetch_add(1, std::memory_order_relaxed);
  if (took >= kContended) slowYields_.fetch_add(1, std::memory_order_relaxed);
}

WaitPolicy::Nanos WaitPolicy::spinFor() {
  // A contended estimate goes stale only while no wait outlasts its spin, that is while spinning
  // costs nothing; the first wait that does yields, and quiet yields bring the estimate down.
  if (!stretch_ || !contended() || crowded_.load(std::memory_order_relaxed)) return short_;
  if (longMode_.load(std::memory_order_relaxed) ||
      explore_.fetch_add(1, std::memory_order_relaxed) % kExplore == 0) {
    longSpins_.fetch_add(1, std::memory_order_relaxed);
    return std::max(longSpin(), short_);
  }
  return short_;
}

void WaitPolicy::ended(Nanos idle, Nanos spun) {
  // Only long spins teach: a wait that ended within the short budget needed no long one.
  if (!stretch_ || spun <= short_ || idle <= short_) return;
  // What a long spin buys is staying on the CPU: a waiter that yields loses it for a time slice,
  // and its peer, back from its own, then waits for it in turn. That pays while what is awaited
  // comes within a few time slices (the scheduler kept the peer off its CPU), not when it comes
  // far later (the peer computes between collectives: the cycles are better given away).
  const bool paid = idle <= kPaysWithin * spun;
  const uint32_t p = paid ? paid_.fetch_add(1, std::memory_order_relaxed) + 1
                          : paid_.load(std::memory_order_relaxed);
  const uint32_t u = paid ? unpaid_.load(std::memory_order_relaxed)
                          : unpaid_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (p + u < kWindow) return;
  // One thread closes the window (the others' counts may land in the next one: steering only).
  paid_.store(0, std::memory_order_relaxed);
  unpaid_.store(0, std::memory_order_relaxed);
  longMode_.store(p >= u, std::memory_order_relaxed);
}

void WaitPolicy::pause(Nanos idle, int& idlePolls) {
  pause(idle, idlePolls, Backoff{std::chrono::milliseconds(50), 8});
}

void WaitPolicy::noteCrowded(bool crowded) { crowded_.store(crowded, std::memory_order_relaxed); }

void WaitPolicy::lookAround() {
  const int64_t now = sinceEpochNs(Clock::now());
  int64_t last = lastLook_.load(std::memory_order_relaxed);
  if (now - last < std::chrono::duration_cast<Nanos>(kLookEvery).count()) return;
  if (!lastLook_.compare_exchange_strong(last, now, std::memory_order_relaxed)) return;
  noteCrowded(runnableOtherThreads() > 0);
}

void WaitPolicy::pause(Nanos idle, int& idlePolls, Backoff backoff) {
  if (stretch_ && contended()) {
    // The CPU is contended by this process's own threads (compute beside communication): they
    // get it whole while this waiter sleeps; a yielding waiter would take a turn every time.
    lookAround();
    if (crowded_.load(std::memory_order_relaxed)) {
      // Naps from 20 us doubling to 640 us: every wake-up preempts a compute thread, so a long
      // wait wakes seldom; a short one is seen within ~2x its length.
      const int doublings = std::min(idlePolls++, kMaxNapDoublings);
      const timespec nap{0, 20000L << doublings};
      nanosleep(&nap, nullptr);
      sleeps_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  const unsigned every = std::max(backoff.sleepEvery, 1U);
  if (idle < backoff.yieldOnlyFor || static_cast<unsigned>(++idlePolls) % every != 0) {
    const auto start = Clock::now();
    sched_yield();
    noteYield(Clock::now() - start);
    return;
  }
  const timespec nap{0, 20000};  // 20 us: gives the core up even to same-priority peers
  nanosleep(&nap, nullptr);
  sleeps_.fetch_add(1, std::memory_order_relaxed);
}

WaitPolicy::Stats WaitPolicy::stats() const {
  Stats s;
  s.yields = yields_.load(std::memory_order_relaxed);
  s.slowYields = slowYields_.load(std::memory_order_relaxed);
  s.sleeps = sleeps_.load(std::memory_order_relaxed);
  s.longSpins = longSpins_.load(std::memory_order_relaxed);
  s.yieldNs = static_cast<uint64_t>(std::max<int64_t>(0, yieldNs_.load()));
  s.contended = contended();
  s.longMode = longMode_.load(std::memory_order_relaxed);
  s.crowded = crowded_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace smddp::common
