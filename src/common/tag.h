// Layout of the 64-bit libfabric tag. Messages of different collectives can never match because
// the per-communicator sequence number and the collective kind are part of every tag.
//
//   63      60 59    56 55                              24 23                    0
//  +----------+--------+----------------------------------+----------------------+
//  | reserved | kind   | sequence number (mod 2^32)        | slot within collective|
//  +----------+--------+----------------------------------+----------------------+
//
// reserved: zero, left to providers that keep high bits (we check at start-up that the provider
// offers kTagBitsUsed bits). kind: the CollectiveKind. sequence: wraps after 2^32 collectives,
// far more than can be in flight. slot: the algorithm's message index (step x segment), unique per
// (sender, receiver) pair within one collective.
#pragma once

#include <cstdint>

namespace smddp {

enum class CollectiveKind : uint8_t {
  kAllReduce = 1,
  kBroadcast = 2,
  kAllGather = 3,
  kBarrier = 4,
  kControl = 15,  // bootstrap and out-of-band checks
};
const char* toString(CollectiveKind kind);

namespace tag {

constexpr int kSlotBits = 24;
constexpr int kSeqBits = 32;
constexpr int kKindBits = 4;
constexpr int kTagBitsUsed = kSlotBits + kSeqBits + kKindBits;
constexpr uint64_t kMaxSlot = (uint64_t{1} << kSlotBits) - 1;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint64_t kKindMask = (uint64_t{1} << kKindBits) - 1;

static_assert(kTagBitsUsed <= 60, "keep the top 4 tag bits free for providers");
static_assert(kSlotBits + kSeqBits + kKindBits == 60, "fields must tile bits 0..59");

constexpr uint64_t make(CollectiveKind kind, uint64_t seq, uint64_t slot) {
  return ((static_cast<uint64_t>(kind) & kKindMask) << (kSlotBits + kSeqBits)) |
         ((seq & kSeqMask) << kSlotBits) | (slot & kMaxSlot);
}
constexpr uint64_t slotOf(uint64_t t) { return t & kMaxSlot; }
constexpr uint64_t seqOf(uint64_t t) { return (t >> kSlotBits) & kSeqMask; }
constexpr uint64_t kindOf(uint64_t t) { return (t >> (kSlotBits + kSeqBits)) & kKindMask; }

static_assert(slotOf(make(CollectiveKind::kBarrier, 7, 9)) == 9);
static_assert(seqOf(make(CollectiveKind::kBarrier, 7, 9)) == 7);
static_assert(kindOf(make(CollectiveKind::kBarrier, 7, 9)) == 4);

}  // namespace tag
}  // namespace smddp
