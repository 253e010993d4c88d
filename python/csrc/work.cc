// SmddpWork: completion plumbing between smddp::Request and c10d::Work / ivalue::Future.
// Path of a completion: engine completes request i -> WorkState::requestCompleted(i) -> (last
// request) finish(): copy staged results back, mark finished, complete the Future. finish() runs
// on the waiting caller's thread when one is in wait() (the synchronous fast path), else on the
// group's CompletionQueue. Waiters see "finished" only after the copies.
#include "work.h"

#include <algorithm>
#include <utility>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

// Slack for the completion thread after the engine finished: bounded, but generous enough for a
// Python .then() callback of an earlier Work that runs ahead of ours.
constexpr std::chrono::milliseconds kCompletionGrace{30000};

}  // namespace

WorkState::WorkState(std::vector<at::Tensor> outs) : outputs(std::move(outs)) {}

void WorkState::completeFuture(c10::ivalue::Future& future, const std::exception_ptr& failure) {
  if (failure) {
    future.setError(failure);
  } else {
    future.markCompleted(c10::IValue(outputs));
  }
}

c10::intrusive_ptr<c10::ivalue::Future> WorkState::getFuture() {
  std::lock_guard<std::mutex> lock(mutex);
  if (!future_) {
    auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
    // Fresh, so no callbacks yet: completing it under our lock calls nothing back. Kept only
    // once complete, so a throw here never leaves a Future that nobody will complete.
    if (finished) completeFuture(*future, error);
    future_ = std::move(future);
  }
  return future_;
}

bool WorkState::done() const {
  std::lock_guard<std::mutex> lock(mutex);
  return finished;
}

void WorkState::requestCompleted(size_t index, const std::shared_ptr<WorkState>& self,
                                 CompletionQueue& completions) {
  bool handOff = false;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (index < requests.size()) {
      auto requestError = requests[index].error();
      if (requestError && !error) {
        error = requestError;
      }
    }
    handOff = --pending == 0 && !waiterDriving;
  }
  if (handOff) {
    completions.post([self] { self->finish(); });
  }
}

bool WorkState::claimFinishLocked(std::exception_ptr& failure) {
  if (finishing) return false;
  finishing = true;
  failure = error;
  return true;
}

void WorkState::finish() {
  std::exception_ptr failure;
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (!claimFinishLocked(failure)) return;
  }
  finishClaimed(failure);
}

std::exception_ptr WorkState::finishClaimed(std::exception_ptr failure) {
  if (!failure) {
    try {
      staging.copyBack();
    } catch (...) {
      failure = std::current_exception();
    }
  }
  staging.release();
  // The Future before `finished`: a waiter woken by it may read the Future's value at once.
  std::vector<Request> drop;  // breaks the cycle request -> callback -> state -> request
  c10::intrusive_ptr<c10::ivalue::Future> future;
  {
    std::lock_guard<std::mutex> lock(mutex);
    error = failure;
    future = future_;
    if (!future) {  // none asked for: finished at once (a later getFuture() makes it complete)
      finished = true;
      drop.swap(requests);
    }
  }
  if (future) {
    try {
      completeFuture(*future, failure);  // its callbacks run here, outside our lock
    } catch (...) {
      // A callback that throws must not leave waiters hanging or the request cycle alive; the
      // outcome (`error`) is already final, and torch reports callback errors on chained Futures.
    }
    std::lock_guard<std::mutex> lock(mutex);
    finished = true;
    drop.swap(requests);
  }
  cv.notify_all();
  return failure;
}

SmddpWork::SmddpWork(int rank, ::c10d::OpType opType, std::vector<Request> requests,
                     std::shared_ptr<WorkState> state, std::shared_ptr<CompletionQueue> completions,
                     std::chrono::milliseconds timeout, std::chrono::milliseconds groupTimeout)
    : ::c10d::Work(rank, opType),
      requests_(std::move(requests)),
      state_(std::move(state)),
      timeout_(timeout),
      groupTimeout_(groupTimeout) {
  state_->requests = requests_;
  if (requests_.empty()) {
    state_->finish();
    return;
  }
  state_->pending = static_cast<int>(requests_.size());
  for (size_t i = 0; i < requests_.size(); ++i) {
    // Runs on the engine's thread (or at once): only records and hands off, never blocks there.
    requests_[i].onComplete([state = state_, completions, i] {
      state->requestCompleted(i, state, *completions);
    });
  }
}

bool SmddpWork::isCompleted() { return state_->done(); }

bool SmddpWork::isSuccess() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->finished && !state_->error;
}

std::exception_ptr SmddpWork::exception() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->error;
}

std::vector<at::Tensor> SmddpWork::result() { return state_->outputs; }

bool SmddpWork::wait(std::chrono::milliseconds timeout) {
  bool explicitLimit = timeout != kNoTimeout || timeout_ != groupTimeout_;
  auto limit = timeout != kNoTimeout ? timeout : timeout_;
  if (!explicitLimit) {
    // Fast path: drive the engine from this thread, then finish inline. Request::wait() is
    // bounded by the communicator's timeout, which is the group's.
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      state_->waiterDriving = !state_->finishing;
    }
    for (auto& request : requests_) {
      try {
        request.wait();
      } catch (const Error&) {
        break;  // its error (timeout included) is stored in state_ too
      }
    }
    bool finishHere = false;
    std::exception_ptr failure;
    {
      std::lock_guard<std::mutex> lock(state_->mutex);
      if (state_->waiterDriving) {
        state_->waiterDriving = false;
        // The completion queue may own the finish already: the request completed before this
        // wait began and handed finish() off; then wait passively below.
        finishHere = state_->pending == 0 && state_->claimFinishLocked(failure);
      }
      // pending > 0: a request is still running; its callback will hand finish() off.
    }
    if (finishHere) {  // the synchronous path: finished here, nothing left to wait for
      if ((failure = state_->finishClaimed(failure))) std::rethrow_exception(failure);
      return true;
    }
  }
  // Not finished here: a caller-chosen limit (measured from the start, nothing ran before), or
  // a request still running (another failed first) or a finish handed to the completion thread:
  // one more collective's limit plus the completion thread's slack.
  const auto deadline = std::chrono::steady_clock::now() + limit +
                        (explicitLimit ? std::chrono::milliseconds(0) : kCompletionGrace);
  // A caller-chosen limit is honoured by waiting passively: a waiter that drives the engine runs
  // the collective to its own end and could not return at `deadline`.
  std::unique_lock<std::mutex> lock(state_->mutex);
  if (!state_->cv.wait_until(lock, deadline, [this] { return state_->finished; })) {
    throw Error(ErrorCode::kTimeout,
                "smddp: wait on " + ::c10d::opTypeToString(retrieveOpType()) + " timed out after " +
                    std::to_string(limit.count()) + " ms (rank " + std::to_string(rank_) +
                    "); the collective itself continues until the group's timeout");
  }
  if (state_->error) {
    std::rethrow_exception(state_->error);
  }
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> SmddpWork::getFuture() { return state_->getFuture(); }

}  // namespace smddp::torch_shim
