// SPDX-License-Identifier: Apache-2.0
// SlotStep: one use of the shared-memory arena by this rank, following the protocol documented
// in segment.h (free slot -> write -> publish -> read peers -> release). The arena collectives
// (all_reduce.cc, collectives.cc) are written in these steps only, so the ordering rules live
// here once.
//
// Identity check: every published use carries its collective's sequence number and shape hash
// (CollectiveDesc::shape: kind, dtype, count, op, root, algorithm); a reader compares the
// writer's with its own before it touches the writer's data, so ranks in different collectives
// (or different sizes of one) fail with kMismatch instead of mixing data. Always on: it costs
// two words per use, and the hash is derived when the collective is posted (once per run of
// identical calls).
// A rank that reads nobody in a use (the root of a one-chunk broadcast) defers its check of its
// peers to its next collective: deferCheck() now, settle() as that collective releases its first
// use (or as it begins, when it does not use the slots: a message-based or an eager-ring
// collective; or at shutdown). The eager ring has its own pending checks (eager_ring.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>

#include "algorithms/arena/arena.h"
#include "algorithms/arena/segment.h"
#include "algorithms/exec.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::algo::arena {

// A chunk of at most `cap` bytes in whole elements, at least one element. Every dtype's size is
// a power of two: a mask, not a division (once per collective on the small-message path).
inline size_t wholeElements(size_t cap, size_t elementSize) {
  const size_t whole = (elementSize & (elementSize - 1)) == 0 ? cap & ~(elementSize - 1)
                                                              : cap / elementSize * elementSize;
  return std::max(elementSize, whole);
}

// `peer` published identity (seq, shape) for a use of collective `mine`: it must be the same (same
// sequence number and shape), else kMismatch naming both.
inline void checkIdentityWords(const Exec& exec, int peer, uint64_t seq, uint64_t shape,
                               const CollectiveDesc& mine) {
  if (seq != mine.seq || shape != mine.shape) exec.throwMismatch(peer, seq, mine);
}

class SlotStep {
 public:
  explicit SlotStep(Exec& exec) : exec_(exec), segment_(requireArena(exec).segment()) {
    use_ = requireArena(exec).takeSlotUse();
  }

  // Bytes per use: 1/slotShare of the arena slot, capped by the pipelining segment, whole
  // elements, >= 1 element. Collectives in which every rank both fills its slot and reads its
  // peers' per use (all_gather, arena_split all_reduce) take half a slot: the smaller chunk keeps
  // a rank's slots and its peer's in the core's 1 MiB L2. Broadcast, where each side does one
  // copy per use, takes the whole slot. Measured: docs/ALGORITHMS.md, "Measured constants".
  static size_t chunkBytes(const Exec& exec, size_t elementSize, size_t slotShare = 1) {
    return wholeElements(
        std::min(requireArena(exec).segment().slotBytes() / slotShare, exec.segmentBytes()),
        elementSize);
  }

  unsigned char* mine() { return segment_.slot(exec_.rank(), use_); }
  const unsigned char* slotOf(int r) { return segment_.slot(r, use_); }

  // Waits until every peer is done with this slot's previous use; then the slot may be written.
  // A peer that has published use u-1 has released use u-2 (each rank releases a use before it
  // publishes the next), so its `posted` line, which the last await read anyway, usually
  // answers without touching `consumed`.
  void acquire() {
    if (use_ < 2) return;
    for (int r = 0; r < exec_.size(); ++r) {
      if (r == exec_.rank()) continue;
      if (segment_.posted(r).load(std::memory_order_acquire) >= 2 * use_ - 1) continue;
      exec_.waitWord(segment_.consumed(r), use_ - 1, r, "release a slot");
    }
  }
  // acquire() without its shortcut through `posted`, for the writer of a slot that its peers read
  // in an algorithm whose other ranks publish a use before they release the previous one
  // (hier_leader all_reduce's pipeline): every peer's `consumed` itself.
  void acquireStrict() {
    if (use_ < 2) return;
    for (int r = 0; r < exec_.size(); ++r) {
      if (r != exec_.rank()) exec_.waitWord(segment_.consumed(r), use_ - 1, r, "release a slot");
    }
  }
  // Waits until every peer released `use` (the end of such a pipeline, so that the next
  // collective's acquire() may take its shortcut again).
  static void awaitReleased(Exec& exec, uint64_t use) {
    Segment& segment = requireArena(exec).segment();
    for (int r = 0; r < exec.size(); ++r) {
      if (r != exec.rank()) exec.waitWord(segment.consumed(r), use + 1, r, "release a slot");
    }
  }
  uint64_t use() const { return use_; }

  // Publishes phase 1 (data written, identity set) or phase 2 of this use. Call acquire() first.
  void publish(int phase) {
    if (phase == 1) {
      segment_.identSeq(exec_.rank(), use_).store(exec_.desc().seq, std::memory_order_relaxed);
      segment_.identShape(exec_.rank(), use_).store(exec_.desc().shape, std::memory_order_relaxed);
    }
    segment_.posted(exec_.rank())
        .store(2 * use_ + static_cast<uint64_t>(phase), std::memory_order_release);
  }
  // Waits for `peer`'s phase; on phase 1 also checks that it is in the same collective.
  void await(int peer, int phase) {
    exec_.waitWord(segment_.posted(peer), 2 * use_ + static_cast<uint64_t>(phase), peer,
                   phase == 1 ? "publish its data" : "publish its reduced part");
    if (phase == 1) checkIdentity(exec_, segment_, peer, use_, exec_.desc());
  }
  void awaitAll(int phase) {
    for (int r = 0; r < exec_.size(); ++r) {
      if (r != exec_.rank()) await(r, phase);
    }
  }
  // This rank reads no slot of this use any more. First settles a check an earlier use left:
  // a peer may overwrite that use's identity once this rank released the next one.
  void release() {
    settle(exec_);
    segment_.consumed(exec_.rank()).store(use_ + 1, std::memory_order_release);
  }

  // Leaves the check of every peer's phase-1 identity for this use (released already) to this
  // rank's next release (the identities are kept long enough: segment.h).
  void deferCheck() { requireArena(exec_).deferred = DeferredCheck{use_, exec_.desc()}; }
  // Runs the check an earlier collective of this rank deferred, if any: waits (bounded by this
  // collective's deadline) until each peer published that use, and compares its identity with
  // the earlier collective's.
  static void settle(Exec& exec) {
    Arena& owner = requireArena(exec);
    const std::optional<DeferredCheck> check = std::exchange(owner.deferred, std::nullopt);
    if (!check) return;
    Segment& segment = owner.segment();
    for (int r = 0; r < exec.size(); ++r) {
      if (r == exec.rank()) continue;
      exec.waitWord(segment.posted(r), 2 * check->use + 1, r,
                    "enter this rank's previous collective, a broadcast from this rank");
      checkIdentity(exec, segment, r, check->use, check->desc);
    }
  }

 private:
  // `peer` published phase 1 of `use`: it must be in collective `mine` (same sequence number and
  // shape), else kMismatch naming both.
  static void checkIdentity(const Exec& exec, Segment& segment, int peer, uint64_t use,
                            const CollectiveDesc& mine) {
    checkIdentityWords(exec, peer, segment.identSeq(peer, use).load(std::memory_order_relaxed),
                       segment.identShape(peer, use).load(std::memory_order_relaxed), mine);
  }

  Exec& exec_;
  Segment& segment_;
  uint64_t use_;
};

// out[0, count) = op over the n ranks, in rank order, of the elements at byte `at` of their slots
// in `step` (divided for AVG): the reduction every arena reduce makes.
inline void reduceSlots(SlotStep& step, const CollectiveArgs& args, int n, void* out, size_t at,
                        size_t count) {
  if (n == 1) {  // a host of one rank (hosts of different sizes): its slot is the sum
    std::memmove(out, step.slotOf(0) + at, count * args.elementSize());
    return;
  }
  reduce::reduce(args.dtype, args.op, out, step.slotOf(0) + at, step.slotOf(1) + at, count);
  for (int r = 2; r < n; ++r) {
    reduce::reduce(args.dtype, args.op, out, out, step.slotOf(r) + at, count);
  }
  if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, out, count, n);
}

// Bytes per piece when every use carries `pieces` pieces (one per rank: reduce_scatter, scatter;
// one per rank and host: the hierarchical collectives): a chunk (1/slotShare of a slot, as
// SlotStep::chunkBytes) / pieces in whole elements, at least one element, which the whole slot
// must hold `pieces` of (else Error(kInvalidArgument) naming the collective).
inline size_t piecePer(const Exec& exec, size_t elementSize, size_t pieces, size_t slotShare = 1) {
  const size_t slotBytes = requireArena(exec).segment().slotBytes();
  if (pieces * elementSize > slotBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                exec.head() + ": the arena's slot (" + formatBytes(slotBytes) +
                    ") holds less than the " + std::to_string(pieces) +
                    " elements a use carries; raise SMDDP_ARENA_SLOT_BYTES");
  }
  return std::max<size_t>(
             1, SlotStep::chunkBytes(exec, elementSize, slotShare) / elementSize / pieces) *
         elementSize;
}

inline size_t piecePerRank(const Exec& exec, size_t elementSize) {
  return piecePer(exec, elementSize, static_cast<size_t>(exec.size()));
}

}  // namespace smddp::algo::arena
