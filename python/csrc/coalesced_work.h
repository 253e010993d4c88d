// SPDX-License-Identifier: Apache-2.0
// The Work that endCoalescing() returns: the collectives issued between startCoalescing() and
// endCoalescing() (torch's _coalescing_manager, batch_isend_irecv), each already posted to the
// engine in order, finished as one. Its Future's value is every member's outputs, in issue order.
// Invariants: wait() is bounded (its limit, or each member's own); the first member error is the
// outcome; the Future completes once, after every member's Future.
#pragma once

#include <ATen/core/ivalue.h>

#include <chrono>
#include <exception>
#include <vector>

#include "torch_compat.h"

namespace smddp::torch_shim {

class CoalescedWork : public ::c10d::Work {
 public:
  CoalescedWork(int rank, std::vector<c10::intrusive_ptr<::c10d::Work>> members);

  bool isCompleted() override;
  bool isSuccess() const override;
  std::exception_ptr exception() const override;
  std::vector<at::Tensor> result() override;
  void synchronize() override;
  bool wait(std::chrono::milliseconds timeout = kNoTimeout) override;
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  void blockCurrentStream() SMDDP_OVERRIDE_2X { wait(); }

 private:
  std::vector<c10::intrusive_ptr<::c10d::Work>> members_;
};

}  // namespace smddp::torch_shim
