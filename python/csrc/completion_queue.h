// One thread per process group that finishes torch-side work after the engine completes a
// request: copies staged results back, marks Work done, completes the Future (whose .then()
// callbacks may run Python and take the GIL).
// Invariant: engine callbacks only post() here and never block; a post() after stop() runs inline
// so no completion is ever lost.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

namespace smddp::torch_shim {

class CompletionQueue {
 public:
  CompletionQueue();
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  void post(std::function<void()> fn);
  // Runs what is queued, then joins the thread. Call without holding the GIL.
  void stop();

 private:
  void run();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  bool stopping_ = false;
  bool stopped_ = false;
  std::thread thread_;
};

}  // namespace smddp::torch_shim
