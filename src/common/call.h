// SPDX-License-Identifier: Apache-2.0
// The call vocabulary: what a rank asked for, as every layer names it. A Call is the part of a
// collective that every rank must agree on (kind, dtype, count, op, root); the algorithms' args
// (algo::CollectiveArgs) add the buffers, the description in messages (algo::CollectiveDesc) adds
// the sequence number and the algorithm, the watch's record (watch::Signature) adds the
// algorithm. Each of them is a Call, so nothing copies these fields by hand.
//
// Invariant: a Call made with Call::of holds only what its kind uses (root -1 unless rooted, op
// kSum unless it reduces, dtype and count zeroed for a barrier), so equal calls compare equal,
// hash equal and read the same on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "smddp/types.h"

namespace smddp {

enum class CollectiveKind : uint8_t {
  kAllReduce = 1,
  kBroadcast = 2,
  kAllGather = 3,
  kBarrier = 4,
  kReduceScatter = 5,
  kReduce = 6,
  kGather = 7,
  kScatter = 8,
  kAllToAll = 9,    // equal blocks: count elements from every rank to every rank
  kAllToAllV = 10,  // uneven: per-rank counts that only the two ranks of a pair agree on
  kSend = 11,       // point-to-point (core/point_to_point.h): not collectives, no algorithm
  kRecv = 12,
  kControl = 15,  // bootstrap and out-of-band checks
};
const char* toString(CollectiveKind kind);

struct Call {
  CollectiveKind kind = CollectiveKind::kBarrier;
  DataType dtype = DataType::kUInt8;
  // Elements (all_gather, gather, scatter, reduce_scatter, all_to_all: one rank's block); 0 for
  // all_to_allv, whose per-rank counts are in the args (no rank knows the others').
  size_t count = 0;
  ReduceOp op = ReduceOp::kSum;
  int root = -1;

  // The normalized call (see the invariant above).
  static Call of(CollectiveKind kind, DataType dtype, size_t count, ReduceOp op = ReduceOp::kSum,
                 int root = -1);

  static constexpr bool carriesData(CollectiveKind k) {
    return k != CollectiveKind::kBarrier && k != CollectiveKind::kControl;
  }
  static constexpr bool reduces(CollectiveKind k) {
    return k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduceScatter ||
           k == CollectiveKind::kReduce;
  }
  // Per-rank counts: count is not part of what the ranks agree on.
  static constexpr bool uneven(CollectiveKind k) { return k == CollectiveKind::kAllToAllV; }
  static constexpr bool rooted(CollectiveKind k) {
    return k == CollectiveKind::kBroadcast || k == CollectiveKind::kReduce ||
           k == CollectiveKind::kGather || k == CollectiveKind::kScatter;
  }
  bool carriesData() const { return carriesData(kind); }
  bool reduces() const { return reduces(kind); }
  bool rooted() const { return rooted(kind); }
  bool uneven() const { return uneven(kind); }

  size_t elementSize() const { return dataTypeSize(dtype); }
  size_t bytes() const { return count * elementSize(); }

  // This call's fields (a derived value's Call part, for assignment and comparison).
  Call& call() { return *this; }
  const Call& call() const { return *this; }
};

bool operator==(const Call& a, const Call& b);
inline bool operator!=(const Call& a, const Call& b) { return !(a == b); }

// "all_reduce(float32, 1024, sum)", "broadcast(float16, 512, root=1)", "barrier()",
// "all_to_allv(int64, per-rank counts)".
std::string callText(const Call& call);

// FNV-1a of an algorithm's name; 0 for nullptr (run locally).
uint64_t algorithmNameHash(const char* algorithm);
// 64-bit hash of what every rank must agree on: the call's fields its kind uses, and the
// algorithm (its algorithmNameHash): ranks configured with different algorithms would exchange
// differently sized messages, which is as unsafe as a mismatch.
uint64_t shapeHash(const Call& call, uint64_t algorithmHash);

}  // namespace smddp
