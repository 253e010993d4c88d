// SPDX-License-Identifier: Apache-2.0
// Request: the public handle. Every wait is bounded; a failed collective rethrows to every waiter.
#include "smddp/request.h"

#include "core/communicator_impl.h"
#include "smddp/error.h"

namespace smddp {

Request::Request(std::shared_ptr<core::RequestState> state) : state_(std::move(state)) {}

bool Request::completed() const { return state_->done(); }

// The error is stored before completion callbacks run (and before done()), so a callback sees it.
std::exception_ptr Request::error() const { return state_->error(); }

uint64_t Request::sequence() const { return state_->desc.seq; }

bool Request::test() {
  if (!state_->done()) return false;
  if (auto e = state_->error()) std::rethrow_exception(e);
  return true;
}

void Request::onComplete(std::function<void()> fn) { state_->addCallback(std::move(fn)); }

void Request::wait(std::chrono::milliseconds timeout) {
  if (!state_->done() && !state_->engine->waitFor(*state_, timeout)) {
    throw Error(ErrorCode::kTimeout, "smddp: wait on " + state_->desc.describe() +
                                         " gave up after " + std::to_string(timeout.count()) +
                                         " ms; the collective is still running");
  }
  test();
}

void Request::wait() {
  if (!state_->done()) {
    // Each collective ahead of this one is bounded by its own deadline; the bound below only
    // guards against an engine bug turning into a silent hang.
    std::chrono::milliseconds bound{0};
    if (!state_->engine->waitQueued(*state_, std::chrono::seconds(5), &bound)) {
      throw Error(ErrorCode::kInternal, "smddp: " + state_->desc.describe() +
                                            " did not complete within " +
                                            std::to_string(bound.count()) + " ms");
    }
  }
  test();
}

}  // namespace smddp
