// SPDX-License-Identifier: Apache-2.0
// RequestState: one posted collective, shared by the public Request handle, the engine queue and
// whoever runs it. Completion is a seq_cst read-modify-write that sets done(), announced to
// sleeping waiters by Engine::announce() (which says why none is missed); callbacks run once,
// outside every lock, before done(). Without callbacks a completion is one compare-and-swap and
// takes no lock (see complete()).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/registry.h"

namespace smddp::planes {
class DeviceWork;
class StagedCall;
}  // namespace smddp::planes

namespace smddp::core {

using planes::StagedCall;
class Engine;
class PointToPoint;

class RequestState {
 public:
  // User-provided, so that allocate_shared's value-initialization runs the member initializers
  // only instead of first zeroing the whole object (a 264-byte `rep stos` per collective).
  RequestState() {}  // NOLINT(modernize-use-equals-default)

  algo::CollectiveArgs args;
  algo::CollectiveDesc desc;
  const algo::Algorithm* algorithm = nullptr;  // nullptr: handled locally (size 1 or no data)
  // Not owning (a reference count here cost two atomic operations per collective): the engine
  // completes every request before it is destroyed (Engine::stop), and a handle reaches it only
  // while its request is not done.
  Engine* engine = nullptr;
  // Set for a send or a recv instead of `engine`: waits drive it (core/point_to_point.h).
  PointToPoint* p2p = nullptr;
  // A completed recv's sender (set before completion); -1 otherwise.
  int source = -1;
  // A segment of a CUDA call (planes/smddp/stager.h): the engine runs args once the segment's
  // input is in host memory, then lets its output copies go. The call's last segment is the one
  // the caller's Request holds.
  std::shared_ptr<StagedCall> staged;
  size_t segment = 0;
  // A call on the NCCL plane (planes/nccl/nccl_work.h): neither engine nor p2p is set; the
  // plane completes the request when the work settles.
  std::shared_ptr<planes::DeviceWork> deviceWork;
  // Callers asleep in a wait on this request (changed under the engine's mutex, read by the
  // completer without it): see Engine::announce().
  std::atomic<int> sleepers{0};
  // A caller took it to run without the engine's lock (Engine::waitQueued); set while it holds the
  // engine's busy_ flag, so whoever takes busy_ next sees it.
  std::atomic<bool> claimed{false};

  // seq_cst (a plain load on x86): pairs with `sleepers`, see Engine::announce().
  bool done() const { return (state_.load() & kDone) != 0; }
  std::exception_ptr error() const;
  // Publishes the outcome (error may be null), wakes waiters, runs callbacks. Called once.
  void complete(std::exception_ptr error);
  void addCallback(std::function<void()> fn);

 private:
  // state_ bits. One atomic read-modify-write completes a request that has no callbacks.
  static constexpr uint8_t kCallbacks = 1;   // addCallback was called
  static constexpr uint8_t kCompleting = 2;  // error_ is final; callbacks are being run
  static constexpr uint8_t kDone = 4;        // callbacks ran: done()
  std::atomic<uint8_t> state_{0};
  std::mutex mutex_;                      // guards callbacks_
  std::exception_ptr error_;              // written once, before kCompleting
  std::vector<std::function<void()>> callbacks_;
};

}  // namespace smddp::core
