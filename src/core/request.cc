// SPDX-License-Identifier: Apache-2.0
// Request: the public handle. Every wait is bounded; a failed collective rethrows to every waiter.
#include "smddp/request.h"

#include <thread>

#include "core/communicator_impl.h"
#include "core/point_to_point.h"
#include "planes/device_work.h"
#include "planes/smddp/stager.h"
#include "smddp/error.h"

namespace smddp {
namespace {

// The device side of a CUDA call (staged, IPC or NCCL); null for a host call.
planes::DeviceWork* deviceWorkOf(const core::RequestState& s) {
  if (s.staged) return s.staged.get();
  return s.deviceWork.get();
}

// A call on the NCCL plane: the plane completes its request (no engine, no p2p).
bool onPlane(const core::RequestState& s) { return s.engine == nullptr && s.p2p == nullptr; }

// Waits (bounded) until a plane's request is done: the work settles, then its completion has
// run (done() follows at once).
bool awaitPlane(core::RequestState& s, std::chrono::steady_clock::time_point deadline) {
  if (s.done()) return true;
  if (s.deviceWork && !s.deviceWork->awaitSettled(deadline)) return false;
  while (!s.done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace

Request::Request(std::shared_ptr<core::RequestState> state) : state_(std::move(state)) {}

bool Request::completed() const { return state_->done(); }

// The error is stored before completion callbacks run (and before done()), so a callback sees it.
std::exception_ptr Request::error() const { return state_->error(); }

uint64_t Request::sequence() const { return state_->desc.seq; }
std::string Request::call() const { return callText(state_->desc.call()); }
const char* Request::algorithm() const { return state_->desc.algorithm; }
size_t Request::bytes() const { return state_->desc.bytes(); }

bool Request::test() {
  if (!state_->done()) return false;
  if (auto e = state_->error()) std::rethrow_exception(e);
  return true;
}

void Request::onComplete(std::function<void()> fn) { state_->addCallback(std::move(fn)); }

int Request::source() const { return state_->source; }

void Request::wait(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const bool done = state_->done() ||
                    (onPlane(*state_) ? awaitPlane(*state_, deadline)
                     : state_->p2p != nullptr ? state_->p2p->waitUntil(*state_, deadline)
                                              : state_->engine->waitFor(*state_, timeout));
  // A CUDA call is done once its result is in device memory too.
  if (!done || (state_->staged && !device::waitEvent(state_->staged->device(),
                                                     state_->staged->end(), deadline))) {
    throw Error(ErrorCode::kTimeout, "smddp: wait on " + state_->desc.describe() +
                                         " gave up after " + std::to_string(timeout.count()) +
                                         " ms; it is still running");
  }
  test();
}

void Request::wait() {
  if (!state_->done() && onPlane(*state_)) {
    // The plane fails the work at its own deadline; the grace only guards against a bug.
    const auto bound = state_->desc.timeout + std::chrono::seconds(5);
    if (!awaitPlane(*state_, std::chrono::steady_clock::now() + bound)) {
      throw Error(ErrorCode::kInternal, "smddp: " + state_->desc.describe() +
                                            " did not complete within " +
                                            std::to_string(bound.count()) + " ms");
    }
  }
  if (!state_->done() && state_->p2p != nullptr) {
    // The operation fails at its own deadline (whoever drives sweeps it); the grace only guards
    // against a bug turning into a silent hang.
    const auto bound = state_->desc.timeout + std::chrono::seconds(5);
    if (!state_->p2p->waitUntil(*state_, std::chrono::steady_clock::now() + bound)) {
      throw Error(ErrorCode::kInternal, "smddp: " + state_->desc.describe() +
                                            " did not complete within " +
                                            std::to_string(bound.count()) + " ms");
    }
  }
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
  if (state_->staged) {
    // The engine's part is done; the copies back to the device follow on the staging stream.
    // Waited for even when the collective failed: once wait() returns or throws, the device is
    // done with the call's buffers.
    const auto bound = state_->desc.timeout + std::chrono::seconds(5);
    core::StagedCall& call = *state_->staged;
    if (!device::waitEvent(call.device(), call.end(), std::chrono::steady_clock::now() + bound)) {
      throw Error(ErrorCode::kTimeout, "smddp: " + state_->desc.describe() +
                                           ": the copy of the result to " + call.device().name() +
                                           " device memory did not finish within " +
                                           std::to_string(bound.count()) + " ms");
    }
  }
  test();
}

void* Request::deviceStream() const {
  const planes::DeviceWork* work = deviceWorkOf(*state_);
  return work != nullptr ? work->stream() : nullptr;
}

void Request::waitOnStream(void* stream) {
  planes::DeviceWork* work = deviceWorkOf(*state_);
  if (work == nullptr) {
    wait();
    return;
  }
  // A message whose NCCL communicator is still being formed has no device work yet: its event
  // is recorded once it has (bounded by the call's timeout, which fails it otherwise).
  if (!work->ready() &&
      !work->awaitReady(std::chrono::steady_clock::now() + state_->desc.timeout +
                        std::chrono::seconds(5))) {
    throw Error(ErrorCode::kTimeout, "smddp: " + state_->desc.describe() +
                                         ": its device work was not enqueued in time");
  }
  // The stream waits in any case: what it runs next must come after the device's work, even
  // of a failed call.
  work->device().streamWait(stream, work->end());
  if (auto e = state_->error()) std::rethrow_exception(e);
}

}  // namespace smddp
