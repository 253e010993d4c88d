// SPDX-License-Identifier: Apache-2.0
// The c10d::Work returned by every smddp collective: wraps one or more smddp::Requests, the
// tensors they use, and the Future that DDP's comm hooks chain on. Allocations per collective: the
// Work itself (the base's mutex_, cv_, completed_ and exception_ are its state) and its list of
// output tensors.
// Invariants: wait() never blocks longer than its timeout (or the group's, when none is given);
// the Future's value is the list of output tensors and is set only after staged copies are back;
// engine errors reach wait(), exception() and the Future unchanged (RuntimeError in Python).
// The Future's callbacks run before the Work is marked finished (so a waiter woken by it sees
// their effects): a callback must not wait() on its own Work.
//
// "Armed": completion callbacks sit on the requests, so the Work finishes without anybody
// asking (on the group's CompletionQueue) — needed only when something must happen then: staged
// results to copy back, a Future to complete, a passive waiter to wake. A plain synchronous
// collective is never armed: wait() drives the engine and finishes inline, and isCompleted()
// finishes a collective it finds done. While armed and unfinished the Work holds a reference to
// itself, the callbacks' target.
#pragma once

#include <ATen/core/ivalue.h>
#include <c10/util/SmallVector.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <vector>

#include "comm_slot.h"
#include "completion_queue.h"
#include "group_hooks.h"
#include "smddp/request.h"
#include "tensor_map.h"
#include "torch_compat.h"

namespace smddp::torch_shim {

// What the Works of a group share with it, and keep alive past it.
struct WorkShared {
  std::shared_ptr<CompletionQueue> completions;
  std::shared_ptr<CommGate> gate;  // held shared while a wait may drive the engine
  std::shared_ptr<GroupHooks> hooks;
};

class SmddpWork : public ::c10d::Work {
  // Only create() can name one, so every Work comes from create(), which arms a Work that must
  // copy results back (the constructor stays public for c10::make_intrusive).
  struct Key {
    explicit Key() = default;
  };

 public:
  using Requests = c10::SmallVector<Request, 1>;

  // `requests` are posted; `outputs` is the Future's value; `staging` holds what to copy back and
  // keep alive. `timeout` is this collective's (per-op option or the group's); `groupTimeout`
  // the group's.
  // `timed` (the group's collective timing is on): the Work is armed at once and its last
  // request's completion stamps the end, for getDuration(). `device` >= 0: the tensors are on
  // that CUDA device (see wait()). While the group has completion hooks, the Work is armed and
  // timed too, and reports its completion to them once it is finished.
  static c10::intrusive_ptr<SmddpWork> create(int rank, ::c10d::OpType opType, Requests requests,
                                              std::vector<at::Tensor> outputs, Staging staging,
                                              std::shared_ptr<const WorkShared> shared,
                                              std::chrono::milliseconds timeout,
                                              std::chrono::milliseconds groupTimeout,
                                              bool timed = false, int device = -1);
  SmddpWork(Key, int rank, ::c10d::OpType opType, Requests requests,
            std::vector<at::Tensor> outputs, Staging staging,
            std::shared_ptr<const WorkShared> shared, std::chrono::milliseconds timeout,
            std::chrono::milliseconds groupTimeout);
  // A Work dropped before its requests completed (fire and forget: torch's join does that)
  // hands its tensors to the requests, which release them when done.
  ~SmddpWork() override;

  bool isCompleted() override;
  // The sender of a completed recv (recv from any source); torch reads it after wait().
  int sourceRank() const override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override { return outputs_; }
  // CPU tensors: results are in place once completed; the base's bookkeeping (2.x: the
  // registry of in-flight collectives used as graph inputs) still runs. CUDA tensors: the
  // current stream waits for the results, as wait().
  void synchronize() override;
  // CPU tensors: returns once the results are in place (bounded). CUDA tensors (as
  // ProcessGroupNCCL): the current stream waits on the device for the results and the host
  // returns at once; a collective that already failed throws here, a later failure surfaces at
  // the next collective (the communicator is then broken). isCompleted() stays the host's view.
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  // CPU tensors have no stream to make wait: the host waits (bounded, as wait()). CUDA tensors:
  // the current stream waits.
  void blockCurrentStream() SMDDP_OVERRIDE_2X { wait(); }
  // Milliseconds from the post to the engine's completion of the last request; needs the
  // group's collective timing on (enableCollectivesTiming) and a completed Work.
  float getDuration() const SMDDP_OVERRIDE_2X;
  // Unique in the process and never reused (what completion hooks report); drawn only for the
  // Works made while the group has completion hooks, the base's key otherwise.
  uint64_t getCompletionKey() const SMDDP_OVERRIDE_HOOKS;

 private:
  bool requestsDone() const;
  std::exception_ptr requestsError() const;  // the first request's error, in order
  // Arms the Work (mutex_ held): returns false when it already was; the caller then registers
  // the callbacks with attachCallbacks() after releasing the lock.
  bool armLocked();
  void attachCallbacks();
  // Engine callback of one request (engine or caller thread; must not block): the last one hands
  // the finish to the completion queue unless a caller inside wait() will finish inline.
  void requestCompleted();
  // Claims the finish (mutex_ held, requests done): false when someone else did. An unarmed Work
  // has nothing to do at its finish, so it is finished right here (completed_ is then set).
  bool claimFinishLocked();
  // An unarmed Work whose requests are done is finished here (mutex_ held); returns completed_.
  bool finishIfDoneLocked();
  // The finish for a caller that claimed it on an armed Work: copies staged results back,
  // completes the Future, marks the Work finished, drops the self-reference. Returns the outcome.
  std::exception_ptr finishClaimed();
  void finish();  // the completion queue's: claim, then finishClaimed()
  void completeFuture(c10::ivalue::Future& future, const std::exception_ptr& failure);
  // The group's completion hooks, once the Work is finished (reporting_ only).
  void report(const std::exception_ptr& failure);
  // Waits (without driving) until finished or `deadline`; rethrows the outcome.
  bool waitFinished(std::chrono::steady_clock::time_point deadline,
                    std::chrono::milliseconds limit);

  Requests requests_;
  Staging staging_;
  std::vector<at::Tensor> outputs_;  // the Future's value
  std::shared_ptr<const WorkShared> shared_;
  uint64_t completionKey_ = 0;  // 0: none drawn (see getCompletionKey)
  bool reporting_ = false;  // the group had completion hooks when the Work was made
  std::chrono::milliseconds timeout_;
  std::chrono::milliseconds groupTimeout_;
  // Guarded by mutex_; completed_ (the base's) is "finished", exception_ its outcome.
  std::atomic<bool> armed_{false};  // written under mutex_, read without it by wait()
  int pending_ = 0;                 // armed: requests whose callback has not run yet
  bool waiterDriving_ = false;      // a caller inside wait() will finish inline
  bool finishing_ = false;          // the finish is claimed (set with or before completed_)
  c10::intrusive_ptr<SmddpWork> self_;               // armed and not finished
  c10::intrusive_ptr<c10::ivalue::Future> future_;  // null until getFuture()
  // Collective timing (create's `timed`): the post, and the last request's completion.
  bool timed_ = false;
  std::chrono::steady_clock::time_point postedAt_{};
  std::chrono::steady_clock::time_point doneAt_{};  // guarded by mutex_; set when pending_ hits 0
  int device_ = -1;  // the CUDA device of the tensors; -1: host memory (or the fake test mode)
};

}  // namespace smddp::torch_shim
