// The c10d::Work returned by every smddp collective: wraps one or more smddp::Requests, the
// tensors they use, and the Future that DDP's comm hooks chain on.
// Invariants: wait() never blocks longer than its timeout (or the group's, when none is given);
// the Future's value is the list of output tensors and is set only after staged copies are back;
// engine errors reach wait(), exception() and the Future unchanged (RuntimeError in Python).
// The Future's callbacks run before the Work is marked finished (so a waiter woken by it sees
// their effects): a callback must not wait() on its own Work.
#pragma once

#include <ATen/core/ivalue.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <vector>

#include "completion_queue.h"
#include "smddp/request.h"
#include "tensor_map.h"
#include "torch_compat.h"

namespace smddp::torch_shim {

// What completion needs; shared with the engine callbacks so it never refers to the Work
// (a callback holding the Work would form a cycle through the Request it belongs to).
struct WorkState {
  explicit WorkState(std::vector<at::Tensor> outputs);  // the Future's value: a tensor list

  // Engine callback of request `index` (engine or caller thread; must not block). Records its
  // error; the last one hands finish() to the completion queue unless a caller is waiting in
  // wait(), which then finishes inline: no thread hand-off on the synchronous path.
  void requestCompleted(size_t index, const std::shared_ptr<WorkState>& self,
                        CompletionQueue& completions);
  // Copies staged results back, completes the Future if one was asked for, marks the Work
  // finished. Runs once; later calls return at once.
  void finish();
  // Claims the finish (mutex held): false when someone else did; else `failure` = error.
  bool claimFinishLocked(std::exception_ptr& failure);
  // finish() for a caller that claimed it; returns the outcome (null: success).
  std::exception_ptr finishClaimed(std::exception_ptr failure);
  bool done() const;
  // The Future, made on first use (most Works are only waited on: DDP's hooks ask, a plain
  // dist.all_reduce does not). One made after `finished` is completed at once; one made before
  // is completed before `finished` is set, so a waiter that sees `finished` sees it complete.
  c10::intrusive_ptr<c10::ivalue::Future> getFuture();

  std::vector<Request> requests;
  Staging staging;
  std::vector<at::Tensor> outputs;  // the Future's value

  mutable std::mutex mutex;
  std::condition_variable cv;
  int pending = 0;           // requests not yet completed
  bool waiterDriving = false;  // a caller is inside wait() and will finish inline
  bool finishing = false;    // finish() claimed (by the queue or a waiter)
  bool finished = false;
  std::exception_ptr error;

 private:
  void completeFuture(c10::ivalue::Future& future, const std::exception_ptr& failure);

  c10::intrusive_ptr<c10::ivalue::Future> future_;  // null until getFuture()
};

class SmddpWork : public ::c10d::Work {
 public:
  // Attaches completion callbacks to `requests`; `state` must be fully set up (outputs, staging).
  // `timeout` is this collective's (per-op option or the group's); `groupTimeout` the group's.
  SmddpWork(int rank, ::c10d::OpType opType, std::vector<Request> requests,
            std::shared_ptr<WorkState> state, std::shared_ptr<CompletionQueue> completions,
            std::chrono::milliseconds timeout, std::chrono::milliseconds groupTimeout);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override {}  // CPU tensors: results are in place once completed
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;

 private:
  std::vector<Request> requests_;
  std::shared_ptr<WorkState> state_;
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds groupTimeout_;
};

}  // namespace smddp::torch_shim
