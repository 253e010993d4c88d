// SPDX-License-Identifier: Apache-2.0
// CommSlot: see comm_slot.h.
#include "comm_slot.h"

#include <c10/util/Exception.h>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

// After the previous communicator was aborted, callers inside it leave within an engine poll;
// this bound only turns an engine bug into an error instead of a hang.
constexpr std::chrono::milliseconds kAbortedLeave{10000};

}  // namespace

void CommSlot::abort(const std::string& reason) const {
  std::shared_lock<CommGate> lock(*gate_);
  if (comm_) comm_->abort(reason);
}

std::optional<ErrorCode> CommSlot::brokenCode() const {
  std::shared_lock<CommGate> lock(*gate_);
  if (!comm_ || comm_->brokenReason().empty()) return std::nullopt;
  return comm_->brokenCode();
}

std::unique_lock<CommGate> CommSlot::exclusive(const std::optional<std::string>& abortReason,
                                               std::chrono::milliseconds bound, int rank) {
  // Only replace() writes comm_, under replaceMutex_, which the caller holds: reading it here
  // without the gate races with nobody.
  if (abortReason && comm_) comm_->abort(*abortReason);
  std::unique_lock<CommGate> lock(*gate_, std::defer_lock);
  if (lock.try_lock_for(bound)) return lock;
  if (!abortReason && comm_) {
    comm_->abort("the group is being shut down and a collective was still running after " +
                 std::to_string(bound.count()) + " ms");
  }
  TORCH_CHECK(lock.try_lock_for(kAbortedLeave), errorHead(rank),
              ": a thread still waits inside the group's communicator ",
              (bound + kAbortedLeave).count(),
              " ms after it was aborted; the communicator is left as it is");
  return lock;
}

}  // namespace smddp::torch_shim
