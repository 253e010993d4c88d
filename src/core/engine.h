// SPDX-License-Identifier: Apache-2.0
// Engine: runs a communicator's collectives one at a time, in issue order, and drives the
// transport while doing so. Two kinds of thread may run requests, never at once (the `busy_`
// baton): the engine's own thread, which guarantees progress of asynchronous collectives, and a
// caller blocked in wait(), which runs the queue up to its own request itself — the synchronous
// fast path with no thread hand-off. The engine thread stands back while a caller is driving.
// A blocking collective (enterDirect) takes the baton itself when nothing is queued or running and
// runs without a request at all.
// A caller drives only while its own deadline leaves room for a whole collective (collectives
// cannot change threads midway), so wait(short timeout) still returns on time.
//
// Per-call cost on the synchronous path (post, then wait): one lock/unlock pair of the engine
// mutex (submit) and no precise clock read: a submit stamps its request (the start of the
// thread's grace) only while the thread polls at kDriverGrace (asynchronous use); while callers
// drive their own, the thread stamps an unstamped front itself at its next poll, which keeps the
// kMaxPoll + kDriverGrace bound below. A caller whose request is the queue's front (head_) claims
// it without the mutex: one compare-and-swap of busy_, and the request is marked claimed; it
// stays in the queue until the next holder of the mutex pops it (dropClaimed). A wait reads the
// clock only when its request is not the next to run or others are queued behind it.
//
// Wake-ups: the engine thread takes a request only after it waited kDriverGrace unclaimed. It is
// not woken per request: while requests keep coming it polls, every kDriverGrace after it had to
// run one itself (asynchronous use), backing off to kMaxPoll while callers run their own
// (synchronous use: its wake-ups would only preempt them); after kIdleAfter without any submit it
// blocks until the next submit wakes it. So the first asynchronous collective after a stretch of
// synchronous ones starts up to kMaxPoll + kDriverGrace (1.1 ms) late; the following ones do
// not. Completions wake callers (callersCv_), never the engine thread (threadCv_). A synchronous
// loop thus costs no thread hand-off and no context switch per collective, which matters most
// when ranks share cores.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "core/request_state.h"

namespace smddp::core {

class Engine {
 public:
  using Clock = std::chrono::steady_clock;
  using Runner = std::function<void(RequestState&)>;
  // Called under the engine's lock for each submitted request, in queue order (chooses the
  // algorithm, assigns the sequence number and records the post, so both follow the queue's
  // order). If it throws, the request is not queued and the exception reaches submit's caller.
  using Poster = std::function<void(RequestState&)>;
  // runner executes one request and must call RequestState::complete() before returning.
  // collectiveTimeout bounds one request's run; it decides when a waiting caller may drive.
  static std::unique_ptr<Engine> start(Runner runner, Poster poster,
                                       std::chrono::milliseconds collectiveTimeout);
  ~Engine();

  void submit(std::shared_ptr<RequestState> request);
  // Blocks until request is done or `timeout` passes; returns request->done().
  bool waitFor(RequestState& request, std::chrono::milliseconds timeout);
  // As waitFor, with the deadline set when the wait starts: one collective timeout for this
  // request and for each one ahead of it, plus `grace`; *bound receives that total.
  bool waitQueued(RequestState& request, std::chrono::milliseconds grace,
                  std::chrono::milliseconds* bound);
  // Runs what is queued (bounded by each request's own deadline), then joins the engine thread.
  void stop();
  // A new bound for the collectives posted from now on (Communicator::setTimeout). The waits'
  // bounds and the decision whether a caller may drive use the longest bound any queued
  // collective may still run under, so the value only grows: collectives posted before a
  // shortening keep their longer bound.
  void setCollectiveTimeout(std::chrono::milliseconds timeout) {
    int64_t seen = collectiveTimeoutMs_.load(std::memory_order_relaxed);
    while (timeout.count() > seen &&
           !collectiveTimeoutMs_.compare_exchange_weak(seen, timeout.count(),
                                                       std::memory_order_relaxed)) {
    }
  }

  // The blocking path (a collective run by its caller without a request): when nothing is queued
  // or running and the engine is not stopping, takes busy_, calls describe() under the lock (as
  // the Poster would: the sequence number follows the queue's order) and returns true; the caller
  // then runs the collective itself and calls leaveDirect(). Otherwise it returns false having
  // done nothing (the caller posts instead). If describe throws, busy_ is given back and the
  // exception reaches the caller.
  // Per call: one lock/unlock pair, one compare-and-swap of busy_ and its release; no queue entry,
  // no request, no completion.
  template <class Describe>
  bool enterDirect(Describe&& describe);
  void leaveDirect() { releaseBusy(); }
  // Runs `fn` under the engine's lock, queueing nothing: a call another plane runs (the NCCL
  // plane) takes its sequence number in the order of the queue's.
  template <class Fn>
  void underLock(Fn&& fn) {
    std::lock_guard<std::mutex> lock(mutex_);
    fn();
  }

  // Wakes the callers sleeping on `request` after its completion (RequestState::complete).
  void announce(const RequestState& request);

 private:
  Engine(Runner runner, Poster poster, std::chrono::milliseconds collectiveTimeout);
  void threadMain();
  // The wait proper, entered and left with lock held: drives the queue while the deadline
  // leaves room, else sleeps until the request is done or it may drive again.
  bool waitLocked(std::unique_lock<std::mutex>& lock, RequestState& request, Clock::time_point now,
                  Clock::time_point deadline);
  // Runs queued requests in order (lock held on entry and exit, released while each runs) until
  // `until` is done (or the queue is empty when null). The first runs unconditionally (callers
  // check that a whole collective fits their deadline); each further one only while it fits.
  // Returns whether it ran any: nothing when a caller holds busy_ (a lock-free claim).
  bool drive(std::unique_lock<std::mutex>& lock, RequestState* until, Clock::time_point deadline);
  void runOne(RequestState& request);  // runner_, never throwing
  // Pops the queue's front to run it (lock held); the next one's grace starts at `now` (read
  // only when one is left). byCaller: a waiting caller runs it (the thread's poll back-off).
  std::shared_ptr<RequestState> takeFront(Clock::time_point now, bool byCaller);
  // Pops a front that a caller claimed without the lock (mutex held; it is done or running).
  void dropClaimed();
  // The front as seen without the lock; set under mutex_ whenever the front changes.
  void syncHead() {
    head_.store(queue_.empty() ? nullptr : queue_.front().get(), std::memory_order_release);
  }
  bool acquireBusy() {
    bool idle = false;
    return busy_.compare_exchange_strong(idle, true);
  }
  // Clears busy_ without the lock, then wakes sleeping callers when there is work for them.
  void releaseBusy();
  // One more request run by a caller; only the holder of busy_ writes the count.
  void countCallerRun() {
    drivenByCallers_.store(drivenByCallers_.load(std::memory_order_relaxed) + 1,
                           std::memory_order_relaxed);
  }
  bool mayDrive(Clock::time_point deadline, Clock::time_point now) const {
    return deadline - now >= collectiveTimeout();
  }
  std::chrono::milliseconds collectiveTimeout() const {
    return std::chrono::milliseconds(collectiveTimeoutMs_.load(std::memory_order_relaxed));
  }

  Runner runner_;
  Poster poster_;
  std::atomic<int64_t> collectiveTimeoutMs_;  // setCollectiveTimeout() may raise it any time
  mutable std::mutex mutex_;
  std::condition_variable callersCv_;  // completions, and a turn to drive
  std::condition_variable threadCv_;   // the engine thread: work for it, or stop
  std::deque<std::shared_ptr<RequestState>> queue_;
  // When queue_.front() became runnable; kUnstamped until a submit or the thread stamps it.
  Clock::time_point frontSince_;
  static constexpr Clock::time_point kUnstamped = Clock::time_point::min();
  uint64_t submits_ = 0;  // the thread's idle detection counts submits instead of timing them
  // Submits read the clock (asynchronous use: the thread polls at kDriverGrace); set by the thread.
  std::atomic<bool> stampSubmits_{true};
  bool threadBlocked_ = false;  // the engine thread waits for a submit (no polling)
  // Callers blocked on callersCv_ (read without the mutex): a hand-back of busy_ with work
  // queued wakes them, as one of them may drive it.
  std::atomic<int> sleepers_{0};
  // Someone is running requests (owns the transport). Taken by compare-and-swap only (under
  // mutex_, or by the lock-free claim); the claim clears it without the lock (seq_cst; sleepers
  // are then woken under the lock).
  std::atomic<bool> busy_{false};
  std::atomic<RequestState*> head_{nullptr};  // queue_.front(), for the lock-free claim
  int drivers_ = 0;    // callers in waitLocked whose deadline lets them drive (the fast path
                       // is not counted: it holds busy_ instead)
  // Requests run by callers (the thread's poll back-off); written only by the holder of busy_.
  std::atomic<uint64_t> drivenByCallers_{0};
  bool stop_ = false;
  std::thread thread_;
};

template <class Describe>
bool Engine::enterDirect(Describe&& describe) {
  std::lock_guard<std::mutex> lock(mutex_);
  dropClaimed();
  // drivers_: callers inside a wait that may drive; one may be about to take busy_ for the queue.
  if (stop_ || !queue_.empty() || drivers_ > 0 || !acquireBusy()) return false;
  try {
    describe();
  } catch (...) {
    busy_.store(false);  // nothing was queued meanwhile: the lock is held
    throw;
  }
  countCallerRun();  // the thread's poll backs off as for a caller-run request
  return true;
}

}  // namespace smddp::core
