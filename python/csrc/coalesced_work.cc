// SPDX-License-Identifier: Apache-2.0
// CoalescedWork (see coalesced_work.h): a thin aggregate; each member keeps its own completion
// machinery (staged copies, Future), so finishing the aggregate is asking every member.
#include "coalesced_work.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <utility>

#include "smddp/error.h"

namespace smddp::torch_shim {

CoalescedWork::CoalescedWork(int rank, std::vector<c10::intrusive_ptr<::c10d::Work>> members)
    : ::c10d::Work(rank, compat::kCoalescedOp), members_(std::move(members)) {}

bool CoalescedWork::isCompleted() {
  for (auto& m : members_) {
    if (!m->isCompleted()) return false;
  }
  return true;
}

bool CoalescedWork::isSuccess() const {
  for (const auto& m : members_) {
    if (!m->isSuccess()) return false;
  }
  return true;
}

std::exception_ptr CoalescedWork::exception() const {
  for (const auto& m : members_) {
    if (auto e = m->exception()) return e;
  }
  return nullptr;
}

std::vector<at::Tensor> CoalescedWork::result() {
  std::vector<at::Tensor> all;
  for (auto& m : members_) {
    for (auto& t : m->result()) all.push_back(t);
  }
  return all;
}

void CoalescedWork::synchronize() {
  for (auto& m : members_) m->synchronize();
}

bool CoalescedWork::wait(std::chrono::milliseconds timeout) {
  // Every member is waited for even after one failed (each is bounded), so nothing the engine
  // may still write is released early; the first failure in issue order is rethrown.
  const auto start = std::chrono::steady_clock::now();
  std::exception_ptr first;
  for (auto& m : members_) {
    auto limit = timeout;
    if (timeout != kNoTimeout) {
      auto left = timeout - std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - start);
      limit = std::max(left, std::chrono::milliseconds(1));
    }
    try {
      m->wait(limit);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return true;
}

c10::intrusive_ptr<c10::ivalue::Future> CoalescedWork::getFuture() {
  auto future = c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors());
  if (members_.empty()) {
    future->markCompleted(c10::IValue(std::vector<at::Tensor>{}));
    return future;
  }
  // Completed by whichever member's Future completes last (their callbacks may run on
  // different threads); an error wins over values, the first member's error over later ones.
  struct Join {
    std::mutex mutex;
    size_t left;
    std::vector<c10::intrusive_ptr<c10::ivalue::Future>> parts;
  };
  auto join = std::make_shared<Join>();
  join->left = members_.size();
  for (auto& m : members_) join->parts.push_back(m->getFuture());
  for (auto& part : join->parts) {
    part->addCallback([join, future](c10::ivalue::Future&) {
      {
        std::lock_guard<std::mutex> lock(join->mutex);
        if (--join->left != 0) return;
      }
      std::vector<at::Tensor> all;
      for (auto& p : join->parts) {
        if (p->hasError()) {
          future->setError(p->exception_ptr());
          return;
        }
        for (auto& t : p->value().toTensorVector()) all.push_back(t);
      }
      future->markCompleted(c10::IValue(std::move(all)));
    });
  }
  return future;
}

}  // namespace smddp::torch_shim
