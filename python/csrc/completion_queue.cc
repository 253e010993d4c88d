// The completion thread of a process group (see completion_queue.h).
// Invariant: tasks run in post() order; a task's exception is contained (tasks report their own
// failures through Work/Future) so one bad task cannot stop later completions.
#include "completion_queue.h"

#include <utility>

namespace smddp::torch_shim {

CompletionQueue::CompletionQueue() : thread_([this] { run(); }) {}

CompletionQueue::~CompletionQueue() { stop(); }

void CompletionQueue::post(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_) {
      queue_.push_back(std::move(fn));
      cv_.notify_one();
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
    std::lock_guard<std::mutex> lock(mutex_);
    if (stopped_) {
      return;
    }
    stopping_ = true;
    stopped_ = true;
    cv_.notify_one();
  }
  if (!thread_.joinable()) {
    return;
  }
  // A Future callback could drop the last reference to the group on this very thread.
  if (thread_.get_id() == std::this_thread::get_id()) {
    thread_.detach();
  } else {
    thread_.join();
  }
}

void CompletionQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) {
      return;  // stopping and drained
    }
    {
      auto fn = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      try {
        fn();
      } catch (...) {
      }
    }  // fn's captures (tensors, futures) are released without the lock held
    lock.lock();
  }
}

}  // namespace smddp::torch_shim
