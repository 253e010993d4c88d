// SPDX-License-Identifier: Apache-2.0
// The rank's bookkeeping of its arena, and the settling of the checks it deferred.
#include "algorithms/arena/arena.h"

#include <string>
#include <utility>

#include "algorithms/arena/eager_ring.h"
#include "algorithms/arena/segment.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/exec.h"
#include "smddp/error.h"

namespace smddp::algo::arena {

void PendingChecks::throwFull(const DeferredCheck& check) {
  throw Error(ErrorCode::kInternal, "smddp: " + check.desc.describe() + ": more than " +
                                        std::to_string(kCapacity) + " pending checks");
}

void PendingChecks::push(const DeferredCheck& check) {
  if (count_ == kCapacity) throwFull(check);
  items_[(head_ + count_) & (kCapacity - 1)] = check;
  ++count_;
}

Arena::Arena(std::unique_ptr<Segment> segment) : segment_(std::move(segment)) {}
Arena::~Arena() = default;

size_t Arena::eagerBytes() const { return segment_->eagerBytes(); }

const char Context::kFamily = 0;

void throwNoArena(const Exec& exec) {
  throw Error(ErrorCode::kInvalidArgument,
              exec.head() +
                  ": this algorithm needs the shared-memory arena, which this communicator "
                  "does not have (ranks on several hosts, SMDDP_ARENA=0, or a provider other "
                  "than shm)");
}

void settleDeferred(Exec& exec, Use next) {
  if (contextOf(exec) == nullptr) return;  // only arena collectives defer checks
  if (next != Use::kSlots) SlotStep::settle(exec);
  if (next != Use::kEager) EagerStep::settle(exec, true);
}

}  // namespace smddp::algo::arena
