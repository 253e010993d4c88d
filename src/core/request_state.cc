// SPDX-License-Identifier: Apache-2.0
// RequestState: one collective's outcome and its completion callbacks (request_state.h). The
// completion protocol lives here; the engine only calls complete() and is told (announce) when a
// request finished.
#include "core/request_state.h"

#include <utility>
#include <vector>

#include "core/engine.h"

namespace smddp::core {

std::exception_ptr RequestState::error() const {
  // Before kCompleting the outcome is not known yet; after it, error_ never changes.
  return (state_.load(std::memory_order_acquire) & kCompleting) != 0 ? error_ : nullptr;
}

// Callbacks run before done() turns true, so a waiter that returns from wait() sees their effects
// (torch marks its Future from one). A callback added while they run is run at once by its adder.
// Without callbacks a completion is one compare-and-swap (0 -> completing | done), no lock. An
// adder sets kCallbacks (under mutex_) before reading kCompleting, a completer sets kCompleting
// before taking mutex_ for the callbacks: an adder that saw no kCompleting has pushed its
// callback before the completer takes them; one that saw it runs its own.
void RequestState::complete(std::exception_ptr error) {
  error_ = std::move(error);
  uint8_t expected = 0;
  if (!state_.compare_exchange_strong(expected, kCompleting | kDone)) {  // callbacks were added
    state_.fetch_or(kCompleting);
    std::vector<std::function<void()>> callbacks;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      callbacks.swap(callbacks_);
    }
    for (auto& fn : callbacks) {
      try {
        fn();
      } catch (...) {
        // Dropped (Request::onComplete: a callback must not throw): the others still run and
        // the request still completes, so no waiter hangs and the outcome stays final.
      }
    }
    state_.fetch_or(kDone);  // seq_cst, as the exchange above: see Engine::announce()
  }
  if (engine) engine->announce(*this);
}

void RequestState::addCallback(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if ((state_.fetch_or(kCallbacks) & kCompleting) == 0) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

}  // namespace smddp::core
