// SPDX-License-Identifier: Apache-2.0
// The completion thread of a process group (see completion_queue.h).
// Invariant: tasks run in post() order; a task's exception is contained (tasks report their own
// failures through Work/Future) so one bad task cannot stop later completions.
#include "completion_queue.h"

#include <utility>

#include "smddp/helper_thread.h"

namespace smddp::torch_shim {

CompletionQueue::CompletionQueue()
    : state_(std::make_shared<State>()),
      thread_(startHelperThread("smddp-complete", [state = state_] { run(state); })) {}

CompletionQueue::~CompletionQueue() { stop(); }

void CompletionQueue::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (!state_->stopping) {
      state_->queue.push_back(std::move(fn));
      state_->cv.notify_one();
      return;
    }
  }
  try {
    fn();
  } catch (...) {
  }
}

void CompletionQueue::stop() {
  {
    std::lock_guard<std::mutex> lock(state_->mutex);
    if (state_->stopping) {
      return;
    }
    state_->stopping = true;
    state_->cv.notify_one();
  }
  if (!thread_.joinable()) {
    return;
  }
  // A Future callback could drop the last reference to the group on this very thread; the
  // thread then drains the queue on its own State and ends.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void CompletionQueue::run(const std::shared_ptr<State>& state) {
  std::unique_lock<std::mutex> lock(state->mutex);
  for (;;) {
    state->cv.wait(lock, [&] { return state->stopping || !state->queue.empty(); });
    if (state->queue.empty()) {
      return;  // stopping and drained
    }
    {
      auto fn = std::move(state->queue.front());
      state->queue.pop_front();
      lock.unlock();
      try {
        fn();
      } catch (...) {
      }
    }  // fn's captures (tensors, futures, Works) are released without the lock held
    lock.lock();
  }
}

}  // namespace smddp::torch_shim
