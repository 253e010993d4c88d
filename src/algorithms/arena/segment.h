// SPDX-License-Identifier: Apache-2.0
// Segment: memory that every rank of one host maps, for the arena collectives (collectives.h).
// Each rank owns one region: a control page of flag words and two data slots used alternately
// (double buffering). `posted` shares its cache line with the identity words that a reader checks
// right after it (one line transfer per peer per use); `consumed` has its own line. A rank writes
// only its own region's data slots and flag words; everyone reads everyone's.
//
// The protocol over these words ("uses"): every collective of the arena path consumes uses
// 0, 1, 2, ... of a per-rank counter (Arena::takeSlotUse, arena.h) that advances identically on
// every rank (same collectives, same order, same sizes). Use u writes slot u % 2. For use u a
// rank:
//   1. before writing its slot, waits until every peer's `consumed` >= u - 1 (use u-2 of that
//      slot is read by all); a peer's `posted` >= 2u-1 implies it, since a rank stores
//      `consumed` for a use before it publishes the next (a rule every arena algorithm must
//      keep: slot_step.h's acquire() relies on it);
//   2. writes data, then its identity for use u (the collective's sequence number and a hash of
//      its shape: kind, dtype, count, op, root, algorithm; kept for three uses), then
//      `posted` = 2u+1 (release); an optional second phase of the same use publishes
//      `posted` = 2u+2;
//   3. reads peers' slots after their `posted` reached the phase it needs (acquire), checking
//      their ident against its own (a mismatch is an error, never wrong data);
//   4. stores `consumed` = u + 1 when it will not read any slot of use u again.
// Counters only grow, so nothing is ever reset and a late reader never mistakes an old use.
// Identities are kept for three uses, not two, because the root of a one-chunk broadcast checks
// its peers' identity for use u only just before it releases use u+1 (slot_step.h, settle()). A
// peer overwrites that identity at use u+3 at the earliest, and by rule 1 that waits until the
// root released use u+1 (or published u+2, which comes later): after the check.
//
// The eager ring (eager_ring.h, small broadcasts): besides the slots each rank owns kEagerDepth
// entries, each a header (stamp, collective sequence number, shape hash) and up to eagerPayload()
// bytes. Ring uses are counted apart from slot uses (Arena's EagerState, arena.h). At ring use u
// every rank writes its entry u % kEagerDepth (the root: data and identity; the others: identity
// only), after every peer's `eagerConsumed` reached u - kEagerDepth + 1; a reader waits for the
// writer's stamp = u + 1.
// A root lets its peers' identities go unchecked for up to kEagerDepth uses, holding its own
// `eagerConsumed` at the oldest unchecked use so that nobody overwrites what it still has to read.
// The depth lets a root run many broadcasts ahead of its peers, as Open MPI's per-peer fast boxes
// do, instead of one with the two slots.
//
// Backing: one POSIX shared-memory object for the communicator, created by rank 0, sized with
// posix_fallocate (a full /dev/shm is an error at creation, never a SIGBUS later) and unlinked as
// soon as every rank mapped it, so nothing is left behind even if ranks are killed. Tests use
// heap memory shared by threads.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace smddp {
class Store;
}

namespace smddp::algo::arena {

class Segment {
 public:
  // Rank `rank`'s view of the arena.
  Segment(std::shared_ptr<void> memory, unsigned char* base, int rank, int size, size_t slotBytes,
          size_t eagerBytes);

  static constexpr uint64_t kEagerDepth = 64;
  struct EagerHeader {
    std::atomic<uint64_t> stamp;  // ring use + 1 once the entry is written for that use
    std::atomic<uint64_t> seq;
    std::atomic<uint64_t> shape;
  };

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slotBytes() const { return slotBytes_; }

  std::atomic<uint64_t>& posted(int r) { return control(r)->posted; }
  std::atomic<uint64_t>& consumed(int r) { return control(r)->consumed; }
  std::atomic<uint64_t>& identSeq(int r, uint64_t use) { return control(r)->seq[use % kIdents]; }
  std::atomic<uint64_t>& identShape(int r, uint64_t use) {
    return control(r)->shape[use % kIdents];
  }
  unsigned char* slot(int r, uint64_t use) {
    return region(r) + slotsOffset_ + (use & 1) * slotBytes_;
  }

  // The eager ring (above): broadcasts up to eagerBytes() take it (0: none); eagerPayload() >=
  // eagerBytes() is what one entry holds.
  size_t eagerBytes() const { return eagerBytes_; }
  size_t eagerPayload() const { return eagerStride_ - sizeof(EagerHeader); }
  EagerHeader& eagerHeader(int r, uint64_t use) {
    return *reinterpret_cast<EagerHeader*>(eagerEntry(r, use));
  }
  unsigned char* eagerData(int r, uint64_t use) { return eagerEntry(r, use) + sizeof(EagerHeader); }
  std::atomic<uint64_t>& eagerConsumed(int r) { return control(r)->eagerConsumed; }

  // Bytes of one rank's region for a slot size (slot rounded up to a page) and eager size.
  static size_t regionBytes(size_t slotBytes, size_t eagerBytes);
  static size_t roundSlot(size_t slotBytes);
  static size_t eagerStride(size_t eagerBytes);

 private:
  static constexpr size_t kLine = 64;
  static constexpr size_t kControlBytes = 4096;
  static constexpr uint64_t kIdents = 3;  // uses whose identity is kept (see above)
  struct Control {
    alignas(kLine) std::atomic<uint64_t> posted;
    std::atomic<uint64_t> seq[kIdents];
    std::atomic<uint64_t> shape[kIdents];
    alignas(kLine) std::atomic<uint64_t> consumed;
    alignas(kLine) std::atomic<uint64_t> eagerConsumed;
  };
  static_assert(offsetof(Control, consumed) == kLine, "posted and the identities share one line");
  static_assert(sizeof(Control) <= kControlBytes, "control words exceed the control page");

  unsigned char* region(int r) const { return base_ + static_cast<size_t>(r) * regionBytes_; }
  Control* control(int r) const { return reinterpret_cast<Control*>(region(r)); }
  unsigned char* eagerEntry(int r, uint64_t use) const {
    return region(r) + kControlBytes + (use % kEagerDepth) * eagerStride_;
  }

  std::shared_ptr<void> memory_;  // keeps the mapping alive
  unsigned char* base_;
  int rank_;
  int size_;
  size_t slotBytes_;
  size_t eagerBytes_;
  size_t eagerStride_;
  size_t slotsOffset_;  // the control page, then the ring, then the slots
  size_t regionBytes_;
};

// Heap-backed memory for `size` thread-ranks of one process; view(r) gives rank r its arena.
class HeapSegments {
 public:
  HeapSegments(int size, size_t slotBytes, size_t eagerBytes);
  std::unique_ptr<Segment> view(int rank) const;

 private:
  std::shared_ptr<void> memory_;
  int size_;
  size_t slotBytes_;
  size_t eagerBytes_;
};

// Collective over the store: rank 0 creates and sizes the shared object, every rank maps it, and
// all agree whether it worked. Returns null on every rank (with `why` set) when any rank could not
// map it, did not want it (wanted = false, e.g. SMDDP_ARENA=0 on that rank only) or has another
// slot or eager size than rank 0: ranks whose settings disagree fall back together instead of
// waiting for each other. Throws Error(kStore)
// when the store itself fails or times out.
std::unique_ptr<Segment> createSegment(Store& store, const std::string& prefix, int rank, int size,
                                       size_t slotBytes, size_t eagerBytes,
                                       std::chrono::milliseconds timeout, bool wanted,
                                       std::string& why);

}  // namespace smddp::algo::arena
