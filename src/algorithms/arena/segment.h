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
// The mailboxes (mailbox.h, send/recv within the host): each rank's region holds one mailbox per
// receiver, kMailDepth letters deep, each letter a header (stamp, tag, byte count, carry) and up
// to mailPayload() bytes, written only by that rank; and one `mailRead` word per sender, written
// only by the region's rank as it reads that sender's letters to it. Letter u of a pair is entry
// u % kMailDepth; the writer waits until the reader's `mailRead` reached u - kMailDepth + 1, then
// writes header and payload and stores the stamp u + 1 (release); the reader waits for that stamp
// (acquire), reads, and stores `mailRead` = u + 1. A letter with a nonzero carry has no payload:
// the message follows through libfabric with that carry as its tag.
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
  // Rank `rank`'s view of the arena; mailBytes as asked for (mailPayload() says what fits).
  Segment(std::shared_ptr<void> memory, unsigned char* base, int rank, int size, size_t slotBytes,
          size_t eagerBytes, size_t mailBytes = 0);

  static constexpr uint64_t kEagerDepth = 64;
  struct EagerHeader {
    std::atomic<uint64_t> stamp;  // ring use + 1 once the entry is written for that use
    std::atomic<uint64_t> seq;
    std::atomic<uint64_t> shape;
  };

  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t slotBytes() const { return slotBytes_; }
  // The whole shared object: every rank's region.
  size_t mappedBytes() const { return regionBytes_ * static_cast<size_t>(size_); }

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

  // The mailboxes (above): letters of up to mailPayload() bytes (0: no mailboxes).
  static constexpr uint64_t kMailDepth = 8;
  static constexpr size_t kMailHeaderBytes = 32;  // the payload starts there, 32-byte aligned
  struct MailHeader {
    std::atomic<uint64_t> stamp;  // letter number + 1 once written
    std::atomic<uint64_t> bytes;
    std::atomic<uint32_t> tag;
    std::atomic<uint32_t> carry;  // 0: the payload follows the header; else libfabric's tag
  };
  size_t mailPayload() const { return mailPayload_; }
  MailHeader& mailHeader(int from, int to, uint64_t letter) {
    return *reinterpret_cast<MailHeader*>(mailEntry(from, to, letter));
  }
  unsigned char* mailData(int from, int to, uint64_t letter) {
    return mailEntry(from, to, letter) + kMailHeaderBytes;
  }
  // Letters from `from` that `reader` has read.
  std::atomic<uint64_t>& mailRead(int reader, int from) {
    return *reinterpret_cast<std::atomic<uint64_t>*>(region(reader) + mailOffset_ +
                                                     static_cast<size_t>(from) * kLine);
  }
  // The letter size a group of `size` ranks gets when mailBytes are asked for: mailBytes, less
  // where the mailboxes would take more than kMailBudget per rank; 0 below 64 bytes.
  static size_t mailPayload(size_t mailBytes, int size);

  // Bytes of one rank's region for a slot size (slot rounded up to a page), eager size and mail
  // size in a group of `size` ranks.
  static size_t regionBytes(size_t slotBytes, size_t eagerBytes, size_t mailBytes = 0,
                            int size = 1);
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
  static_assert(sizeof(MailHeader) <= kMailHeaderBytes, "a mail header exceeds its room");
  static constexpr size_t kMailBudget = size_t{4} << 20;  // mailboxes per rank, at most
  static size_t mailStride(size_t payload) { return kMailHeaderBytes + (payload + 63) / 64 * 64; }
  static size_t mailAreaBytes(size_t payload, int size);

  unsigned char* region(int r) const { return base_ + static_cast<size_t>(r) * regionBytes_; }
  Control* control(int r) const { return reinterpret_cast<Control*>(region(r)); }
  unsigned char* eagerEntry(int r, uint64_t use) const {
    return region(r) + kControlBytes + (use % kEagerDepth) * eagerStride_;
  }
  unsigned char* mailEntry(int from, int to, uint64_t letter) const {
    return region(from) + mailOffset_ + static_cast<size_t>(size_) * kLine +
           (static_cast<size_t>(to) * kMailDepth + letter % kMailDepth) * mailStride_;
  }

  std::shared_ptr<void> memory_;  // keeps the mapping alive
  unsigned char* base_;
  int rank_;
  int size_;
  size_t slotBytes_;
  size_t eagerBytes_;
  size_t eagerStride_;
  size_t mailPayload_;
  size_t mailStride_;
  size_t mailOffset_;   // the control page, then the eager ring, then the mailboxes,
  size_t slotsOffset_;  // then the slots
  size_t regionBytes_;
};

// Heap-backed memory for `size` thread-ranks of one process; view(r) gives rank r its arena.
class HeapSegments {
 public:
  HeapSegments(int size, size_t slotBytes, size_t eagerBytes, size_t mailBytes = 0);
  std::unique_ptr<Segment> view(int rank) const;

 private:
  std::shared_ptr<void> memory_;
  int size_;
  size_t slotBytes_;
  size_t eagerBytes_;
  size_t mailBytes_;
};

// Collective over the store: rank 0 creates and sizes the shared object, every rank maps it, and
// all agree whether it worked. Returns null on every rank (with `why` set) when any rank could not
// map it, did not want it (wanted = false, e.g. SMDDP_ARENA=0 on that rank only) or has another
// slot, eager or mail size than rank 0: ranks whose settings disagree fall back together instead
// of waiting for each other. Throws Error(kStore) when the store itself fails or times out.
std::unique_ptr<Segment> createSegment(Store& store, const std::string& prefix, int rank, int size,
                                       size_t slotBytes, size_t eagerBytes, size_t mailBytes,
                                       std::chrono::milliseconds timeout, bool wanted,
                                       std::string& why);

}  // namespace smddp::algo::arena
