// SPDX-License-Identifier: Apache-2.0
// Layout of the 64-bit libfabric tag. Messages of different collectives can never match because
// the per-communicator sequence number and the collective kind are part of every tag.
//
//   63      60 59    56 55          44 43                24 23                    0
//  +----------+--------+--------------+--------------------+----------------------+
//  | reserved | kind   | signature    | sequence (mod 2^20)| message in collective|
//  +----------+--------+--------------+--------------------+----------------------+
//
// reserved: zero, left to providers that keep high bits (we check at start-up that the provider
// offers kTagBitsUsed bits). kind: the CollectiveKind. signature: a 12-bit hash of what the rank
// called (kind, dtype, count, op, root, algorithm; 0 with SMDDP_CHECK_MISMATCH=0), so that ranks
// that called different collectives at one sequence number never match each other's messages:
// no wrong data, and no truncated receive (which can hang shm), while the progress beacon names
// the mismatch. sequence: wraps after 2^20 collectives; the engine runs one collective at a time,
// so no message of collective s is in flight when s + 2^20 starts. message: the algorithm's message
// index (step x segment), unique per (sender, receiver) pair within one collective.
#pragma once

#include <cstdint>

#include "common/call.h"

namespace smddp {


namespace tag {

constexpr int kMsgBits = 24;
constexpr int kSeqBits = 20;
constexpr int kSigBits = 12;
constexpr int kKindBits = 4;
constexpr int kTagBitsUsed = kMsgBits + kSeqBits + kSigBits + kKindBits;
constexpr uint64_t kMaxMsg = (uint64_t{1} << kMsgBits) - 1;
constexpr uint64_t kSeqMask = (uint64_t{1} << kSeqBits) - 1;
constexpr uint64_t kSigMask = (uint64_t{1} << kSigBits) - 1;
constexpr uint64_t kKindMask = (uint64_t{1} << kKindBits) - 1;
constexpr int kSeqShift = kMsgBits;
constexpr int kSigShift = kSeqShift + kSeqBits;
constexpr int kKindShift = kSigShift + kSigBits;

static_assert(kTagBitsUsed <= 60, "keep the top 4 tag bits free for providers");
static_assert(kMsgBits + kSeqBits + kSigBits + kKindBits == 60, "fields must tile bits 0..59");
static_assert(kKindShift + kKindBits == 60, "kind ends at bit 59");

constexpr uint64_t make(CollectiveKind kind, uint64_t seq, uint64_t msg, uint64_t sig = 0) {
  return ((static_cast<uint64_t>(kind) & kKindMask) << kKindShift) |
         ((sig & kSigMask) << kSigShift) | ((seq & kSeqMask) << kSeqShift) | (msg & kMaxMsg);
}
constexpr uint64_t msgOf(uint64_t t) { return t & kMaxMsg; }
constexpr uint64_t seqOf(uint64_t t) { return (t >> kSeqShift) & kSeqMask; }
constexpr uint64_t sigOf(uint64_t t) { return (t >> kSigShift) & kSigMask; }
constexpr uint64_t kindOf(uint64_t t) { return (t >> kKindShift) & kKindMask; }

static_assert(msgOf(make(CollectiveKind::kBarrier, 7, 9)) == 9);
static_assert(seqOf(make(CollectiveKind::kBarrier, 7, 9)) == 7);
static_assert(kindOf(make(CollectiveKind::kBarrier, 7, 9)) == 4);
static_assert(sigOf(make(CollectiveKind::kBarrier, 7, 9, 0xabc)) == 0xabc);
static_assert(seqOf(make(CollectiveKind::kBarrier, 7, 9, 0xfff)) == 7);

}  // namespace tag
}  // namespace smddp
