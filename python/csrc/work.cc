// SPDX-License-Identifier: Apache-2.0
// SmddpWork: completion plumbing between smddp::Request and c10d::Work / ivalue::Future.
// The synchronous path (wait() with the group's timeout, nothing armed): the caller drives its
// requests on the engine, then finishes inline under one lock. An armed Work (staged copies, a
// Future, a passive waiter) finishes when its last request's callback runs: on the waiting
// caller's thread when one is in wait(), else on the group's CompletionQueue. Waiters see
// "finished" (completed_) only after the copies and the Future.
#include "work.h"

#include <utility>

#include "device_streams.h"
#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

// Slack for the completion thread after the engine finished: bounded, but generous enough for a
// Python .then() callback of an earlier Work that runs ahead of ours.
constexpr std::chrono::milliseconds kCompletionGrace{30000};

}  // namespace

c10::intrusive_ptr<SmddpWork> SmddpWork::create(int rank, ::c10d::OpType opType,
                                                Requests requests,
                                                std::vector<at::Tensor> outputs,
                                                Staging staging,
                                                std::shared_ptr<const WorkShared> shared,
                                                std::chrono::milliseconds timeout,
                                                std::chrono::milliseconds groupTimeout,
                                                bool timed, int device) {
  auto work = c10::make_intrusive<SmddpWork>(Key(), rank, opType, std::move(requests),
                                             std::move(outputs), std::move(staging),
                                             std::move(shared), timeout, groupTimeout);
  work->device_ = device;
  // Completion hooks: the Work finishes on its own (armed) and knows its duration (timed).
  if (!work->completed_ && work->shared_->hooks->wantsCompletion()) {
    work->reporting_ = true;
    work->completionKey_ = nextCompletionKey();
    timed = true;
  }
  if (timed) {
    work->timed_ = true;
    work->postedAt_ = std::chrono::steady_clock::now();
    if (work->completed_) work->doneAt_ = work->postedAt_;
  }
  // Armed when results land without a wait, or when the completion must be stamped.
  if (!work->completed_ && (work->staging_.hasCopyBack() || timed)) {
    bool attach = false;
    {
      std::lock_guard<std::mutex> lock(work->mutex_);
      attach = work->armLocked();
    }
    if (attach) work->attachCallbacks();
  }
  return work;
}

SmddpWork::SmddpWork(Key /*only create()*/, int rank, ::c10d::OpType opType, Requests requests,
                     std::vector<at::Tensor> outputs, Staging staging,
                     std::shared_ptr<const WorkShared> shared,
                     std::chrono::milliseconds timeout, std::chrono::milliseconds groupTimeout)
    : ::c10d::Work(rank, opType),
      requests_(std::move(requests)),
      staging_(std::move(staging)),
      outputs_(std::move(outputs)),
      shared_(std::move(shared)),
      timeout_(timeout),
      groupTimeout_(groupTimeout) {
  if (requests_.empty()) {  // nothing was posted (e.g. coalescing no tensors)
    staging_.release();
    finishing_ = true;
    completed_ = true;
  }
}

SmddpWork::~SmddpWork() {
  // An armed Work gets here only finished (self_ lives until then), possibly while its last
  // request is still between its callbacks and done(): the no-op keep-alive then runs at once.
  if (requestsDone()) return;
  struct Tensors {
    std::vector<at::Tensor> outputs;
    Staging staging;
  };
  try {
    auto kept = std::make_shared<Tensors>(Tensors{std::move(outputs_), std::move(staging_)});
    for (auto& request : requests_) {
      if (!request.completed()) request.onComplete([kept] {});
    }
  } catch (...) {  // out of memory: the tensors must not go while the engine may write them
    std::shared_lock<CommGate> inside(*shared_->gate);
    for (auto& request : requests_) {
      try {
        request.wait();
      } catch (...) {
      }
    }
  }
}

bool SmddpWork::requestsDone() const {
  for (const auto& request : requests_) {
    if (!request.completed()) return false;
  }
  return true;
}

std::exception_ptr SmddpWork::requestsError() const {
  for (const auto& request : requests_) {
    if (auto error = request.error()) return error;
  }
  return nullptr;
}

bool SmddpWork::armLocked() {
  if (armed_.load(std::memory_order_relaxed)) return false;
  pending_ = static_cast<int>(requests_.size());
  self_ = c10::intrusive_ptr<SmddpWork>::unsafe_reclaim_from_nonowning(this);
  armed_.store(true, std::memory_order_release);
  return true;
}

void SmddpWork::attachCallbacks() {
  // Only `this` is captured (fits std::function's inline storage); self_ keeps it alive until
  // the finish, which comes after every callback (a request is done only after its callbacks).
  // A request already done runs its callback here, at once.
  for (auto& request : requests_) request.onComplete([this] { requestCompleted(); });
}

void SmddpWork::requestCompleted() {
  c10::intrusive_ptr<SmddpWork> work;  // taken under the lock: nobody can finish us meanwhile
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (--pending_ == 0 && timed_) doneAt_ = std::chrono::steady_clock::now();
    if (pending_ == 0 && !waiterDriving_) work = self_;
  }
  if (work) shared_->completions->post([work = std::move(work)] { work->finish(); });
}

bool SmddpWork::claimFinishLocked() {
  if (finishing_) return false;
  finishing_ = true;
  if (!armed_.load(std::memory_order_relaxed)) {  // no copies, no Future, nobody asleep
    exception_ = requestsError();
    completed_ = true;
    staging_.release();  // inputs and temporaries kept for the collective
  }
  return true;
}

bool SmddpWork::finishIfDoneLocked() {
  if (!finishing_ && !armed_.load(std::memory_order_relaxed) && requestsDone()) {
    claimFinishLocked();
  }
  return completed_;
}

void SmddpWork::completeFuture(c10::ivalue::Future& future, const std::exception_ptr& failure) {
  if (failure) {
    future.setError(failure);
  } else if (device_ >= 0) {
    markCompletedOnDevice(future, c10::IValue(outputs_),
                          std::vector<Request>(requests_.begin(), requests_.end()), device_);
  } else {
    future.markCompleted(c10::IValue(outputs_));
  }
}

std::exception_ptr SmddpWork::finishClaimed() {
  std::exception_ptr failure = requestsError();
  if (!failure) {
    try {
      staging_.copyBack();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  staging_.release();
  // Dropped last: it may be the final reference, once nothing here touches the Work any more.
  c10::intrusive_ptr<SmddpWork> self;
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    exception_ = failure;
    future = future_;
    if (!future) {  // none asked for: finished at once (a later getFuture() makes it complete)
      completed_ = true;
      self = std::move(self_);
    }
  }
  if (future) {  // the Future before completed_: a woken waiter may read its value at once
    try {
      completeFuture(*future, failure);  // its callbacks run here, outside our lock
    } catch (...) {
      // A callback that throws must not leave waiters hanging; the outcome is already final,
      // and torch reports callback errors on chained Futures.
    }
    std::lock_guard<std::mutex> lock(mutex_);
    completed_ = true;
    self = std::move(self_);
  }
  cv_.notify_all();
  // After completed_: a hook's consumer that saw the Work unfinished at issue finds its key here.
  if (reporting_) report(failure);
  return failure;
}

#if SMDDP_TORCH_HOOKS
uint64_t SmddpWork::getCompletionKey() const {
  return completionKey_ != 0 ? completionKey_ : ::c10d::Work::getCompletionKey();
}
#else
uint64_t SmddpWork::getCompletionKey() const { return completionKey_; }
#endif

void SmddpWork::report(const std::exception_ptr& failure) {
  CompletionRecord record;
  record.key = completionKey_;
  record.op = ::c10d::opTypeToString(retrieveOpType());
  record.sequence = requests_.empty() ? 0 : requests_.back().sequence();
  if (timed_) {
    record.durationMs = std::chrono::duration<float, std::milli>(doneAt_ - postedAt_).count();
  }
  if (failure) {
    record.ok = false;
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      record.error = e.what();
    } catch (...) {
      record.error = "unknown error";
    }
  }
  shared_->hooks->runCompletion(record);
}

void SmddpWork::finish() {
  {
    // Posted only for an armed Work, whose claim never finishes it on the spot.
    std::lock_guard<std::mutex> lock(mutex_);
    if (!claimFinishLocked()) return;
  }
  finishClaimed();
}

bool SmddpWork::isCompleted() {
  std::lock_guard<std::mutex> lock(mutex_);
  return finishIfDoneLocked();
}

int SmddpWork::sourceRank() const {
  TORCH_CHECK(requests_.size() == 1 && requests_[0].source() >= 0,
              "smddp: sourceRank() is only known for a completed recv");
  return requests_[0].source();
}

bool SmddpWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_) return !exception_;
  return !armed_.load(std::memory_order_relaxed) && requestsDone() && !requestsError();
}

std::exception_ptr SmddpWork::exception() const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (completed_) return exception_;
  return armed_.load(std::memory_order_relaxed) ? nullptr : requestsError();
}

c10::intrusive_ptr<c10::ivalue::Future> SmddpWork::getFuture() {
  bool attach = false;
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (future_) return future_;
    const bool finished = finishIfDoneLocked();
    future = device_ >= 0 ? makeDeviceFuture(device_)
                          : c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
    // Fresh, so no callbacks yet: completing it under our lock calls nothing back. Kept only
    // once complete or armed, so a throw here never leaves a Future that nobody completes.
    if (finished) {
      completeFuture(*future, exception_);
    } else {
      attach = armLocked();
    }
    future_ = future;
  }
  if (attach) attachCallbacks();
  return future;
}

void SmddpWork::synchronize() {
  if (device_ >= 0) wait();
  ::c10d::Work::synchronize();
}

bool SmddpWork::wait(std::chrono::milliseconds timeout) {
  if (device_ >= 0) {
    void* stream = currentStream(device_);
    std::shared_lock<CommGate> inside(*shared_->gate);
    for (auto& request : requests_) request.waitOnStream(stream);
    return true;
  }
  const bool explicitLimit = timeout != kNoTimeout || timeout_ != groupTimeout_;
  const auto limit = timeout != kNoTimeout ? timeout : timeout_;
  if (!explicitLimit) {
    // Fast path: drive the engine from this thread, then finish inline. Request::wait() is
    // bounded by the communicator's timeout, which is the group's.
    if (armed_.load(std::memory_order_acquire)) {
      std::lock_guard<std::mutex> lock(mutex_);
      waiterDriving_ = !finishing_;
    }
    {
      // Inside the communicator: a reconfigure or shutdown waits for this to end.
      std::shared_lock<CommGate> inside(*shared_->gate);
      for (auto& request : requests_) {
        try {
          request.wait();
        } catch (const Error&) {
          break;  // its error (timeout included) is the Work's outcome too
        }
      }
    }
    bool claimed = false;
    bool finished = false;  // claimed and finished on the spot (an unarmed Work)
    std::exception_ptr failure;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      waiterDriving_ = false;
      // Armed: every callback has run (a request's error is final before its callbacks run;
      // done() only follows them, and a callback that saw waiterDriving_ handed nothing off).
      // Its finish may be owned by the completion queue already (the request completed before
      // this wait began); then wait passively below.
      const bool allIn = armed_.load(std::memory_order_relaxed) ? pending_ == 0 : requestsDone();
      claimed = allIn && claimFinishLocked();
      finished = claimed && completed_;
      failure = exception_;
    }
    if (claimed) {  // the synchronous path: nothing left to wait for
      if (!finished) failure = finishClaimed();
      if (failure) std::rethrow_exception(failure);
      return true;
    }
  }
  // Not finished here: a caller-chosen limit (measured from the start, nothing ran before), or
  // a request still running (another failed first) or a finish handed to the completion thread:
  // one more collective's limit plus the completion thread's slack.
  const auto deadline = std::chrono::steady_clock::now() + limit +
                        (explicitLimit ? std::chrono::milliseconds(0) : kCompletionGrace);
  return waitFinished(deadline, limit);
}

bool SmddpWork::waitFinished(std::chrono::steady_clock::time_point deadline,
                             std::chrono::milliseconds limit) {
  // A caller-chosen limit is honoured by waiting passively: a waiter that drives the engine runs
  // the collective to its own end and could not return at `deadline`. Arming lets the last
  // request's completion wake us.
  bool attach = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    attach = !finishIfDoneLocked() && armLocked();
  }
  if (attach) attachCallbacks();
  std::unique_lock<std::mutex> lock(mutex_);
  if (!cv_.wait_until(lock, deadline, [this] { return completed_; })) {
    throw Error(ErrorCode::kTimeout,
                "smddp: wait on " + ::c10d::opTypeToString(retrieveOpType()) + ": Timed out after " +
                    std::to_string(limit.count()) + " ms (rank " + std::to_string(rank_) +
                    "); the collective itself continues until the group's timeout");
  }
  if (exception_) std::rethrow_exception(exception_);
  return true;
}

float SmddpWork::getDuration() const {
  std::lock_guard<std::mutex> lock(mutex_);
  TORCH_CHECK(timed_, "smddp: getDuration needs collective timing: call "
                      "enableCollectivesTiming() on the group before the collective");
  TORCH_CHECK(completed_, "smddp: getDuration of a collective that has not completed");
  return std::chrono::duration<float, std::milli>(doneAt_ - postedAt_).count();
}

}  // namespace smddp::torch_shim
