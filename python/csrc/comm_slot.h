// SPDX-License-Identifier: Apache-2.0
// CommSlot: the communicator a ProcessGroupSmddp uses now, replaceable while other threads post
// and wait. A reconfigure swaps in the next generation's communicator and releases the old one;
// shutdown releases it for good.
// Invariant: a communicator is destroyed only while nobody is inside it. Posting a collective and
// waiting on one of its requests (which may drive the engine on the caller's thread) happen
// inside a CommUse, which holds the gate shared; replacing or releasing takes the gate
// exclusively, after aborting the old communicator (when asked to) so that callers inside it
// leave promptly. Requests of a released communicator are all completed, so a wait that starts
// afterwards touches nothing of it. The gate is shared with the Works (they outlive the group).
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>

#include "smddp/communicator.h"

namespace smddp::torch_shim {

using CommGate = std::shared_timed_mutex;

// A caller inside the slot's communicator: the gate held shared for the CommUse's life.
class CommUse {
 public:
  CommUse(std::shared_lock<CommGate> lock, Communicator& comm)
      : lock_(std::move(lock)), comm_(&comm) {}
  Communicator& comm() const { return *comm_; }

 private:
  std::shared_lock<CommGate> lock_;
  Communicator* comm_;
};

class CommSlot {
 public:
  CommSlot() : gate_(std::make_shared<CommGate>()) {}

  // The current communicator, entered; throws `absent` (a RuntimeError for torch) when there is
  // none. `absent` is only evaluated then.
  template <class Absent>
  CommUse enter(Absent&& absent) const {
    std::shared_lock<CommGate> lock(*gate_);
    if (!comm_) absent();
    return CommUse(std::move(lock), *comm_);
  }
  bool empty() const {
    std::shared_lock<CommGate> lock(*gate_);
    return comm_ == nullptr;
  }
  // Aborts the current communicator (if any) without waiting for anything; safe from any thread.
  void abort(const std::string& reason) const;
  // The first unrecoverable error of the current communicator: its code, or nullopt when it
  // is healthy (or absent).
  std::optional<ErrorCode> brokenCode() const;

  // Puts `next` (may be null) in the slot and destroys the previous communicator. With
  // `abortReason`, the previous one is aborted first (its pending collectives fail naming the
  // reason); without, callers inside it are waited for as they finish. `bound` limits that
  // wait; past it the previous communicator is aborted (if it was not) and waited for a little
  // longer; if callers are still inside it then, nothing changes and this throws (a
  // communicator is never destroyed under a caller). `whileExclusive` runs with the gate held
  // exclusively, right after the swap (the group's rank and size change there).
  template <class Swapped>
  void replace(std::shared_ptr<Communicator> next, const std::optional<std::string>& abortReason,
               std::chrono::milliseconds bound, int rank, Swapped&& whileExclusive) {
    std::lock_guard<std::mutex> serial(replaceMutex_);
    std::unique_lock<CommGate> lock = exclusive(abortReason, bound, rank);
    std::shared_ptr<Communicator> previous = std::move(comm_);
    comm_ = std::move(next);
    whileExclusive();
    previous.reset();  // waits (bounded) for what it still runs; nobody is inside it
  }

  // For the Works: held shared while they wait on a request.
  const std::shared_ptr<CommGate>& gate() const { return gate_; }

 private:
  // The gate, held exclusively (see replace); throws when callers do not leave in time.
  std::unique_lock<CommGate> exclusive(const std::optional<std::string>& abortReason,
                                       std::chrono::milliseconds bound, int rank);

  std::shared_ptr<CommGate> gate_;
  std::mutex replaceMutex_;              // one replace at a time
  std::shared_ptr<Communicator> comm_;  // written with gate_ held exclusively
};

}  // namespace smddp::torch_shim
