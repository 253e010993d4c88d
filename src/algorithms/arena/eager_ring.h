// SPDX-License-Identifier: Apache-2.0
// EagerStep: one use of the arena's eager ring by this rank (layout and rules in
// algorithms/arena/segment.h): wait until this rank's entry is free, write it, publish, read the
// root's, release. The eager broadcast (collectives.cc) is written in these steps only.
//
// Identity checks: every rank publishes its collective's sequence number and shape hash in its
// entry at every use; a receiver checks the root's before it copies the data. The root reads
// nobody, so it leaves the check of its peers' identities pending (PendingChecks, oldest first)
// and holds its `eagerConsumed` at the oldest pending use, which keeps those identities from
// being overwritten. Pending checks are settled
//   - as soon as all peers published that use, whenever this rank waits in the ring, in batches
//     of kSettleBatch as it passes through the ring without waiting, and at the latest when the
//     check's use comes round again (flow control then proved that every peer published it);
//   - all of them, waiting, before a collective that does not use the ring, and at shutdown
//     (settle(block = true)).
// So a disagreement the root alone can see is raised within 64 ring uses, by the next collective
// off the ring, or at shutdown (a WARN), whichever comes first. No rank waits for another in a
// cycle: whichever rank is furthest behind has published every
// use below its position, so every pending check of those uses can settle, the consumed words
// reach its position, and its next use needs nothing else (its root, ahead of it, wrote it).
#pragma once

#include <cstddef>
#include <cstdint>

#include "algorithms/arena/arena.h"
#include "algorithms/arena/segment.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/exec.h"

namespace smddp::algo::arena {

class EagerStep {
 public:
  // Takes this rank's next ring use and waits until every peer is done with the use that last
  // had its entry (kEagerDepth uses ago).
  explicit EagerStep(Exec& exec);

  // Bytes per use: the ring's payload, whole elements, >= 1 element.
  static size_t chunkBytes(const Exec& exec, size_t elementSize);

  unsigned char* mine() { return segment_.eagerData(exec_.rank(), use_); }
  const unsigned char* of(int r) { return segment_.eagerData(r, use_); }

  // Publishes this rank's entry: identity, then the stamp (dataBytes of data, if any, written
  // before); then prefetches the next use's entry for writing.
  void publish(size_t dataBytes = 0);
  // Waits for `peer`'s entry of this use and checks that it is in the same collective.
  void await(int peer);
  // This rank reads nothing of this use any more; with deferCheck (the root) it leaves the check
  // of its peers' identities pending.
  void release(bool deferCheck);

  // Settles the pending checks: those every peer has published (block = false), or all of them,
  // waiting for the peers within this collective's deadline (block = true).
  static void settle(Exec& exec, bool block);

 private:
  static constexpr size_t kSettleBatch = 16;  // pending checks a rank lets accumulate unprompted
  static constexpr size_t kPrefetchBytes = 1024;  // of the next entry, at most

  void waitForPeers(uint64_t need);
  // settle(exec, false) as a wait's aside (Exec::waitWord): the peers may be waiting for it.
  static void settleSome(Exec& exec) { settle(exec, false); }
  // Stores this rank's `eagerConsumed`: its released uses, held at the oldest pending check.
  static void storeConsumed(Exec& exec, Segment& segment);
  static void checkIdentity(const Exec& exec, Segment& segment, int peer, uint64_t use,
                            const CollectiveDesc& mine);

  Exec& exec_;
  Segment& segment_;
  uint64_t use_;
};

}  // namespace smddp::algo::arena
