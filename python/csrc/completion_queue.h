// SPDX-License-Identifier: Apache-2.0
// One thread per process group that finishes torch-side work after the engine completes a
// request: copies staged results back, marks Work done, completes the Future (whose .then()
// callbacks may run Python and take the GIL).
// Invariant: engine callbacks only post() here and never block; a post() after stop() runs inline
// so no completion is ever lost.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
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
  // Runs what is queued, then joins the thread. Call without holding the GIL. Called on the
  // thread itself (a task dropped the last reference to the queue), it detaches instead.
  void stop();

 private:
  // Shared with the thread, so that the queue may be destroyed from one of its own tasks (a
  // Future callback dropping the last reference to the group, or to a Work holding the queue):
  // the thread finishes its loop on the state it holds.
  struct State {
    std::mutex mutex;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool stopping = false;  // set once by stop(); the thread drains the queue, then ends
  };
  static void run(const std::shared_ptr<State>& state);

  std::shared_ptr<State> state_;
  std::thread thread_;
};

}  // namespace smddp::torch_shim
