// SPDX-License-Identifier: Apache-2.0
// The arena wing: collectives through memory that every rank of one host maps, with no messages.
// It owns its memory (segment.h: the layout and the protocol of its shared words), the steps that
// keep that protocol (slot_step.h: the double-buffered data slots; eager_ring.h: the eager ring
// of small broadcasts), its collectives (collectives.h) and this file: the rank's own bookkeeping
// of the arena, which its peers never see.
//
// Invariant: every rank of a communicator uses its arena alike (same collectives, same order,
// same sizes), so each rank's use counters agree without being exchanged; a check a rank could not
// run at once (the root of a small broadcast reads nobody) is kept here until it is settled.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "algorithms/arena/context.h"
#include "algorithms/collective.h"
#include "algorithms/exec.h"

namespace smddp::algo::arena {

class Segment;  // segment.h

// What of the arena an algorithm runs on, if anything. A kSlots algorithm releases at least one
// slot use per collective (SlotStep), which settles a slot broadcast's deferred check; a kEager
// one settles the eager ring's as it goes.
enum class Use { kNone, kSlots, kEager };

// A check of the peers' identities for arena use `use` that a broadcast's root leaves for later:
// a one-chunk slot broadcast's (slot use, settled by the next collective: slot_step.h) or an eager
// broadcast's (eager ring use, queued in PendingChecks: eager_ring.h).
struct DeferredCheck {
  uint64_t use = 0;
  CollectiveDesc desc;  // the collective the check belongs to
};

// The checks that the root of eager broadcasts left pending (eager_ring.h), oldest first: a fixed
// circular buffer, as long as the eager ring is deep (a root has at most one check per entry).
class PendingChecks {
 public:
  static constexpr size_t kCapacity = 64;  // a power of two; eager_ring.cc checks it is deep enough

  bool empty() const { return count_ == 0; }
  size_t size() const { return count_; }
  const DeferredCheck& front() const { return items_[head_]; }
  void push(const DeferredCheck& check);  // Error(kInternal) when full
  void pop() {
    head_ = (head_ + 1) & (kCapacity - 1);
    --count_;
  }

 private:
  // Out of line: the message is built only on this (never expected) path, not set up per push.
  [[noreturn]] static void throwFull(const DeferredCheck& check);

  std::array<DeferredCheck, kCapacity> items_{};
  size_t head_ = 0;
  size_t count_ = 0;
};

// This rank's bookkeeping of the eager ring; the peers see only the segment.
struct EagerState {
  uint64_t nextUse = 0;    // this rank's next eager ring use (every rank counts alike)
  uint64_t peersDone = 0;  // the least `eagerConsumed` of the peers as this rank last read it
  uint64_t released = 0;   // eager ring uses this rank released
  PendingChecks checks;    // left by eager broadcasts' roots
};

// One rank's arena in one communicator: the mapped segment and the rank's bookkeeping of it.
class Arena {
 public:
  explicit Arena(std::unique_ptr<Segment> segment);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  Segment& segment() const { return *segment_; }
  // Broadcasts up to this size take the eager ring (0: none).
  size_t eagerBytes() const;

  uint64_t takeSlotUse() { return nextSlotUse_++; }
  std::optional<DeferredCheck> deferred;  // left by a slot broadcast's root (slot_step.h)
  EagerState eager;                       // the eager ring (eager_ring.h)

  // Some check is left; its collective's description (for the Exec that settles it).
  bool hasDeferred() const { return deferred || !eager.checks.empty(); }
  const CollectiveDesc& deferredDesc() const {
    return deferred ? deferred->desc : eager.checks.front().desc;
  }

 private:
  std::unique_ptr<Segment> segment_;
  uint64_t nextSlotUse_ = 0;
};

// exec's arena (inline: every arena step asks for it), or throwNoArena (context.h).
inline Arena& requireArena(const Exec& exec) { return *context(exec).arena; }

// Runs every check earlier collectives deferred (broadcast roots), waiting for the peers if need
// be (bounded by exec's deadline), except those the algorithm about to run settles itself (`next`:
// a kSlots one as it releases its first use, a kEager one as it passes through the ring). At
// shutdown `next` is kNone. Does nothing when exec's communicator has no arena.
void settleDeferred(Exec& exec, Use next);

}  // namespace smddp::algo::arena
