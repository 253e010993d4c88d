// SPDX-License-Identifier: Apache-2.0
// Engine implementation. Lock order: Engine::mutex_ only; runner_ is always called without it.
#include "core/engine.h"

#include <algorithm>

#include "smddp/helper_thread.h"

namespace smddp::core {

using Clock = std::chrono::steady_clock;

// How long the engine thread leaves a fresh request to a caller that may be about to wait on
// it: a caller that runs its own request saves the hand-off to this thread. An asynchronous
// collective starts this much later (up to kMaxPoll more when it is the first after a stretch of
// synchronous ones). Measured: docs/ALGORITHMS.md, "Measured constants".
constexpr std::chrono::microseconds kDriverGrace{100};
// While callers drive their own requests, the thread's polls find nothing to do; each such poll
// doubles the interval up to this, so the thread seldom preempts a caller on a shared core.
// Measured: docs/ALGORITHMS.md, "Measured constants".
constexpr std::chrono::milliseconds kMaxPoll{1};
// After this long without a submit (as its polls see them) the engine thread stops polling and
// blocks until the next.
constexpr std::chrono::milliseconds kIdleAfter{20};

std::unique_ptr<Engine> Engine::start(Runner runner, Poster poster,
                                      std::chrono::milliseconds collectiveTimeout) {
  std::unique_ptr<Engine> engine(
      new Engine(std::move(runner), std::move(poster), collectiveTimeout));
  engine->thread_ = startHelperThread("smddp-engine", [raw = engine.get()] { raw->threadMain(); });
  return engine;
}

Engine::Engine(Runner runner, Poster poster, std::chrono::milliseconds collectiveTimeout)
    : runner_(std::move(runner)),
      poster_(std::move(poster)),
      collectiveTimeoutMs_(collectiveTimeout.count()) {}

Engine::~Engine() { stop(); }

void Engine::submit(std::shared_ptr<RequestState> request) {
  const auto now = stampSubmits_.load(std::memory_order_relaxed) ? Clock::now() : kUnstamped;
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropClaimed();
    poster_(*request);
    if (queue_.empty()) frontSince_ = now;
    ++submits_;
    queue_.push_back(std::move(request));
    if (queue_.size() == 1) syncHead();
    wake = threadBlocked_;
  }
  if (wake) threadCv_.notify_one();
}

void Engine::announce(const RequestState& request) {
  // Only a caller sleeping on this very request is woken: a caller waiting for a later request
  // while the engine thread works through the queue sleeps through the others' completions.
  // Most completions have nobody to wake (a caller that drives its own request never sleeps).
  // No lost wake-up: a sleeper counts itself on the request and then reads done(), a completer
  // sets done (a locked read-modify-write) and then reads the count, all seq_cst, so at least
  // one of them sees the other.
  // When a sleeper is counted, taking the mutex orders this completion before its next check.
  if (request.sleepers.load() == 0) return;
  { std::lock_guard<std::mutex> lock(mutex_); }
  callersCv_.notify_all();
}

// The runner completes its request and catches what the collective throws; should anything
// escape it anyway (bookkeeping out of memory), the request still completes with it, so no
// waiter hangs and busy_ is cleared by the caller as usual.
void Engine::runOne(RequestState& request) {
  try {
    runner_(request);
  } catch (...) {
    if (!request.done()) request.complete(std::current_exception());
  }
}

std::shared_ptr<RequestState> Engine::takeFront(Clock::time_point now, bool byCaller) {
  std::shared_ptr<RequestState> front = std::move(queue_.front());
  queue_.pop_front();
  syncHead();
  if (!queue_.empty()) frontSince_ = now;
  if (byCaller) countCallerRun();
  return front;
}

// A completed (or still running) request costs nothing to release here: its callbacks ran at
// completion. The next front's grace starts when the thread next looks (it stamps kUnstamped).
void Engine::dropClaimed() {
  if (queue_.empty() || !queue_.front()->claimed.load(std::memory_order_relaxed)) return;
  queue_.pop_front();
  syncHead();
  if (!queue_.empty()) frontSince_ = kUnstamped;
}

void Engine::releaseBusy() {
  busy_.store(false);  // seq_cst
  // A sleeping caller may be waiting for its turn to drive what was queued meanwhile. It counted
  // itself before checking busy_ under the lock, so it is seen here or it saw busy_ == false.
  if (sleepers_.load() > 0) {
    std::lock_guard<std::mutex> lock(mutex_);
    dropClaimed();
    if (!queue_.empty()) callersCv_.notify_all();
  }
}

bool Engine::drive(std::unique_lock<std::mutex>& lock, RequestState* until,
                   Clock::time_point deadline) {
  if (!acquireBusy()) return false;  // a caller claimed its request since busy_ was read
  dropClaimed();
  // `until` may have been claimed and run by another of its waiters since it was checked.
  bool ran = false;
  for (bool first = true; !queue_.empty() && (until == nullptr || !until->done());
       first = false) {
    const bool more = queue_.size() > 1;
    const auto now = first && !more ? Clock::time_point() : Clock::now();
    if (!first && !mayDrive(deadline, now)) break;
    std::shared_ptr<RequestState> next = takeFront(now, until != nullptr);
    lock.unlock();
    runOne(*next);
    ran = true;
    const bool reached = next.get() == until;
    next.reset();
    lock.lock();
    if (reached) break;
  }
  busy_.store(false, std::memory_order_release);  // sleepers are counted under mutex_, held here
  // Drivers sleeping for their turn (a caller whose request is further back) may take the rest.
  if (!queue_.empty() && sleepers_.load() > 0) callersCv_.notify_all();
  return ran;
}

bool Engine::waitFor(RequestState& request, std::chrono::milliseconds timeout) {
  const auto now = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  return waitLocked(lock, request, now, now + timeout);
}

bool Engine::waitQueued(RequestState& request, std::chrono::milliseconds grace,
                        std::chrono::milliseconds* bound) {
  // The synchronous fast path, without the lock: this request is the front and nobody runs.
  // After taking busy_ the front is read again: the request may have run (and left the queue,
  // or been claimed by another waiter on it) before. The collective runs bounded by its own
  // deadline, so the bound below holds.
  if (head_.load(std::memory_order_acquire) == &request && acquireBusy()) {
    if (head_.load(std::memory_order_acquire) == &request &&
        !request.claimed.load(std::memory_order_relaxed)) {
      request.claimed.store(true, std::memory_order_relaxed);
      countCallerRun();
      *bound = collectiveTimeout() + grace;
      runOne(request);
      releaseBusy();
      return true;
    }
    releaseBusy();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  dropClaimed();
  const auto ahead = static_cast<int64_t>(queue_.size() + (busy_ ? 1 : 0));
  *bound = collectiveTimeout() * (ahead + 1) + grace;
  // Otherwise (the claim raced, or others are ahead) the wait drives or sleeps as usual; its
  // bound leaves room for a whole collective, so it may drive.
  const auto now = Clock::now();
  return waitLocked(lock, request, now, now + *bound);
}

bool Engine::waitLocked(std::unique_lock<std::mutex>& lock, RequestState& request,
                        Clock::time_point now, Clock::time_point deadline) {
  bool driver = mayDrive(deadline, now);
  if (driver) ++drivers_;
  while (!request.done() && now < deadline) {
    if (driver && !mayDrive(deadline, now)) {  // too late to start another collective ourselves
      driver = false;
      --drivers_;
    }
    if (driver && !busy_ && !queue_.empty()) {
      drive(lock, &request, deadline);
    } else {
      sleepers_.fetch_add(1);
      request.sleepers.fetch_add(1);
      callersCv_.wait_until(lock, deadline, [&] {
        return request.done() || (driver && !busy_ && !queue_.empty());
      });
      request.sleepers.fetch_sub(1);
      sleepers_.fetch_sub(1);
    }
    if (request.done()) break;
    now = Clock::now();
  }
  if (driver) --drivers_;
  return request.done();
}

void Engine::threadMain() {
  std::unique_lock<std::mutex> lock(mutex_);
  // The poll interval and whether submits stamp their requests go together: submits stamp
  // exactly while the thread polls at kDriverGrace (asynchronous use) or blocks.
  std::chrono::microseconds poll = kDriverGrace;  // stampSubmits_ starts true
  const auto setPoll = [&](std::chrono::microseconds value) {
    poll = value;
    stampSubmits_.store(value == kDriverGrace, std::memory_order_relaxed);
  };
  uint64_t driven = drivenByCallers_.load(std::memory_order_relaxed);
  uint64_t submits = submits_;
  auto lastSubmitSeen = Clock::now();
  while (true) {
    dropClaimed();
    if (stop_ && queue_.empty() && !busy_) return;
    const auto now = Clock::now();
    if (!queue_.empty() && frontSince_ == kUnstamped) frontSince_ = now;  // see submit()
    if (submits_ != submits) {
      submits = submits_;
      lastSubmitSeen = now;
    }
    // Unclaimed past the grace (or stopping): a caller is not coming for it, run it here.
    if (!queue_.empty() && !busy_ &&
        (stop_ || (drivers_ == 0 && now - frontSince_ >= kDriverGrace))) {
      // Asynchronous use: pick fresh requests up promptly. (Nothing ran: a caller claimed the
      // front meanwhile, and the poll stays as it was.)
      if (drive(lock, nullptr, Clock::time_point::max())) setPoll(kDriverGrace);
      continue;
    }
    const uint64_t byCallers = drivenByCallers_.load(std::memory_order_relaxed);
    if (byCallers != driven) {  // synchronous use: callers run their own, poll less
      driven = byCallers;
      setPoll(std::min<std::chrono::microseconds>(poll * 2, kMaxPoll));
    }
    if (queue_.empty() && !stop_ && now - lastSubmitSeen >= kIdleAfter) {
      threadBlocked_ = true;
      setPoll(kDriverGrace);  // the waking submit stamps; then poll promptly
      threadCv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      threadBlocked_ = false;
    } else if (!queue_.empty() && !busy_ && drivers_ == 0) {
      threadCv_.wait_until(lock, frontSince_ + kDriverGrace);  // its grace ends then
    } else {
      threadCv_.wait_for(lock, poll);
    }
  }
}

void Engine::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
  }
  threadCv_.notify_all();
  callersCv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace smddp::core
