// SPDX-License-Identifier: Apache-2.0
// WaitPolicy: how a rank's waiting threads spend the time until what they wait for arrives:
// busy-polling (the lowest latency), yielding the CPU, or sleeping. One per communicator, shared
// by its waiting threads; it steers speed and CPU use, never correctness (relaxed atomics).
//
// Spinning is cheap only while nobody else wants the CPU. The policy measures what giving the CPU
// up costs here: the time a sched_yield() keeps the thread off it (under 1 us on an idle core; a
// time slice, milliseconds, when other threads are runnable there: compute threads, data
// loaders, other jobs). Then, per wait (the "ski rental" rule: spin about as long as losing the
// CPU would cost):
// - fixed (SMDDP_SPIN_US given): spin that long, then yield;
// - this host's ranks outnumber their CPUs: yield at once (spinning burns the time slice of the
//   very peer being waited for);
// - the CPU is uncontended: spin the short budget (20 us), then yield (which returns at once);
// - the CPU is contended: spin the long budget (the measured yield cost, 200 us to 4 ms) while
//   that pays, that is while at least as many long waits end within four long spins (the peer
//   was kept off its CPU by the scheduler for a slice or two) as later (the peer was busy
//   elsewhere: computing); otherwise spin short and try the long budget on every 8th wait;
// - the CPU is contended by this process's own threads (compute threads beside the waiting
//   communication thread; looked up in /proc every 20 ms while pausing): spin short, then sleep
//   in naps doubling from 20 us to 640 us, so that the compute threads get the CPU nearly whole
//   (a yielding waiter would take a turn each time, a napping one preempts them on every wake).
// Past 50 ms of idling (a send or recv: 2 ms) a waiter also sleeps, so that a long wait gives its
// core back.
// Invariants: every call is bounded (a pause is one yield or one sleep of at most 640 us, and
// at most every 20 ms a walk over /proc/self/task); nothing blocks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace smddp::common {

class WaitPolicy {
 public:
  using Nanos = std::chrono::nanoseconds;

  // How a waiter's time was spent, for memory_stats() and the tests.
  struct Stats {
    uint64_t yields = 0;       // sched_yield() calls of waiters
    uint64_t slowYields = 0;   // of them, those that kept the waiter off its CPU >= kContended
    uint64_t sleeps = 0;       // 20 us sleeps (waits idle past 50 ms)
    uint64_t longSpins = 0;    // waits given the long budget
    uint64_t yieldNs = 0;      // the current estimate of one yield's cost
    bool contended = false;    // yieldNs >= kContended
    bool longMode = false;     // long spins paid in the last window
    bool crowded = false;      // this process's other threads wanted the CPU when last looked
  };

  // A yield that keeps its thread off the CPU this long found other runnable threads there.
  static constexpr Nanos kContended{std::chrono::microseconds(30)};
  static constexpr Nanos kMinLong{std::chrono::microseconds(200)};
  static constexpr Nanos kMaxLong{std::chrono::milliseconds(4)};

  // fixedSpin >= 0 (SMDDP_SPIN_US given): spin exactly that long, then yield. Otherwise adaptive
  // with `shortSpin` as the uncontended budget; oversubscribed: this host's ranks outnumber the
  // CPUs they may use (never spin long; shortSpin is then normally 0).
  static WaitPolicy fixed(Nanos spin) { return WaitPolicy(spin, false, false); }
  static WaitPolicy adaptive(Nanos shortSpin, bool oversubscribed) {
    return WaitPolicy(shortSpin, true, !oversubscribed);
  }
  WaitPolicy(const WaitPolicy&) = delete;  // shared by reference: one per communicator
  WaitPolicy& operator=(const WaitPolicy&) = delete;

  // The spin of a wait about to start idling: how long it busy-polls before its first pause.
  Nanos spinFor();
  // How a wait past its spin pauses: only yields for its first `yieldOnlyFor` of idling (a
  // sleeping waiter wakes ~60 us late: timer slack), then sleeps 20 us on every `sleepEvery`-th
  // pause and yields on the others.
  struct Backoff {
    std::chrono::milliseconds yieldOnlyFor;
    unsigned sleepEvery;
  };
  // One idle poll past the spin, `idle` into the wait; idlePolls: the caller's per-wait counter,
  // starting at 0. Without a Backoff: a collective's, {50 ms, 8}.
  void pause(Nanos idle, int& idlePolls, Backoff backoff);
  void pause(Nanos idle, int& idlePolls);
  // A wait that was given `spun` ended after `idle` of idling: teaches the long budget its worth.
  void ended(Nanos idle, Nanos spun);

  Nanos shortSpin() const { return short_; }
  bool adaptive() const { return adaptive_; }
  Stats stats() const;

  // For tests: feeds one measured yield cost, or what a look at this process's threads found, as
  // pause() would.
  void noteYield(Nanos took);
  void noteCrowded(bool crowded);

 private:
  WaitPolicy(Nanos shortSpin, bool adaptive, bool stretch);
  bool contended() const;
  Nanos longSpin() const;
  void lookAround();

  const Nanos short_;
  const bool adaptive_;
  const bool stretch_;  // a long spin is allowed at all
  std::atomic<int64_t> yieldNs_{0};
  std::atomic<bool> longMode_{true};
  std::atomic<uint32_t> paid_{0};
  std::atomic<uint32_t> unpaid_{0};
  std::atomic<uint32_t> explore_{0};
  std::atomic<bool> crowded_{false};
  std::atomic<int64_t> lastLook_{0};
  std::atomic<uint64_t> yields_{0};
  std::atomic<uint64_t> slowYields_{0};
  std::atomic<uint64_t> sleeps_{0};
  std::atomic<uint64_t> longSpins_{0};
};

}  // namespace smddp::common
