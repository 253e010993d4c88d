// SPDX-License-Identifier: Apache-2.0
// EagerStep: the eager ring's waits, flow control and pending identity checks (eager_ring.h).
#include "algorithms/arena/eager_ring.h"

#include <algorithm>
#include <limits>

#include "common/prefetch.h"

namespace smddp::algo::arena {

static_assert(PendingChecks::kCapacity >= Segment::kEagerDepth,
              "a root may have one check pending per ring entry");

EagerStep::EagerStep(Exec& exec) : exec_(exec), segment_(requireArena(exec).segment()) {
  EagerState& eager = requireArena(exec).eager;
  use_ = eager.nextUse++;
  constexpr uint64_t depth = Segment::kEagerDepth;
  if (use_ >= depth && eager.peersDone < use_ - depth + 1) waitForPeers(use_ - depth + 1);
  // A batch, or a check whose use comes round again: every peer released the uses up to
  // use_ - depth, so it published them, and that check settles without waiting. Settling it
  // here, not only when this rank waits, bounds the queue by the depth and never leaves a peer
  // waiting for a check this rank could settle.
  const PendingChecks& pending = eager.checks;
  if (!pending.empty() && (pending.size() >= kSettleBatch || pending.front().use + depth <= use_)) {
    settle(exec, false);
  }
}

size_t EagerStep::chunkBytes(const Exec& exec, size_t elementSize) {
  return wholeElements(requireArena(exec).segment().eagerPayload(), elementSize);
}

// Reads every peer's `eagerConsumed` (which the last pass through here cached the least of) and
// waits for those below `need`, settling this rank's own pending checks meanwhile: a peer may be
// waiting for them.
void EagerStep::waitForPeers(uint64_t need) {
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (int r = 0; r < exec_.size(); ++r) {
    if (r == exec_.rank()) continue;
    const std::atomic<uint64_t>& word = segment_.eagerConsumed(r);
    uint64_t done = word.load(std::memory_order_acquire);
    if (done < need) {
      exec_.waitWord(word, need, r, "finish with an eager broadcast entry", settleSome);
      done = word.load(std::memory_order_acquire);
    }
    least = std::min(least, done);
  }
  requireArena(exec_).eager.peersDone = least;
}

void EagerStep::publish(size_t dataBytes) {
  Segment::EagerHeader& h = segment_.eagerHeader(exec_.rank(), use_);
  h.seq.store(exec_.desc().seq, std::memory_order_relaxed);
  h.shape.store(exec_.desc().shape, std::memory_order_relaxed);
  h.stamp.store(use_ + 1, std::memory_order_release);
  // The next use's entry, as much of it as this one wrote (a loop repeats its size): its peers
  // read it kEagerDepth uses ago, so its lines are theirs until taken back.
  prefetchForWrite(&segment_.eagerHeader(exec_.rank(), use_ + 1),
                   std::min(sizeof(Segment::EagerHeader) + dataBytes, kPrefetchBytes));
}

void EagerStep::await(int peer) {
  const std::atomic<uint64_t>& stamp = segment_.eagerHeader(peer, use_).stamp;
  exec_.waitWord(stamp, use_ + 1, peer, "publish its eager broadcast data", settleSome);
  checkIdentity(exec_, segment_, peer, use_, exec_.desc());
}

void EagerStep::release(bool deferCheck) {
  EagerState& eager = requireArena(exec_).eager;
  if (deferCheck) eager.checks.push(DeferredCheck{use_, exec_.desc()});
  eager.released = use_ + 1;
  storeConsumed(exec_, segment_);
}

void EagerStep::settle(Exec& exec, bool block) {
  PendingChecks& pending = requireArena(exec).eager.checks;
  if (pending.empty()) return;
  Segment& segment = requireArena(exec).segment();
  bool popped = false;  // since the last store of this rank's `eagerConsumed`
  while (!pending.empty()) {
    const DeferredCheck& check = pending.front();
    bool published = true;
    for (int r = 0; r < exec.size(); ++r) {
      if (r == exec.rank()) continue;
      const std::atomic<uint64_t>& stamp = segment.eagerHeader(r, check.use).stamp;
      if (stamp.load(std::memory_order_acquire) <= check.use) {
        if (!block) {
          published = false;
          break;
        }
        if (popped) storeConsumed(exec, segment);  // the peer may be waiting for it
        popped = false;
        exec.waitWord(stamp, check.use + 1, r,
                      "enter an earlier broadcast from this rank (eager ring)");
      }
      checkIdentity(exec, segment, r, check.use, check.desc);
    }
    if (!published) break;
    pending.pop();
    popped = true;
  }
  if (popped) storeConsumed(exec, segment);
}

void EagerStep::storeConsumed(Exec& exec, Segment& segment) {
  // Every pending use is below eager.released by the time this runs. A root with checks pending
  // mostly stores what the word already holds (the oldest pending use): skipped.
  const EagerState& eager = requireArena(exec).eager;
  const uint64_t consumed = eager.checks.empty() ? eager.released : eager.checks.front().use;
  std::atomic<uint64_t>& word = segment.eagerConsumed(exec.rank());
  if (word.load(std::memory_order_relaxed) != consumed) {
    word.store(consumed, std::memory_order_release);
  }
}

void EagerStep::checkIdentity(const Exec& exec, Segment& segment, int peer, uint64_t use,
                              const CollectiveDesc& mine) {
  const Segment::EagerHeader& h = segment.eagerHeader(peer, use);
  checkIdentityWords(exec, peer, h.seq.load(std::memory_order_relaxed),
                     h.shape.load(std::memory_order_relaxed), mine);
}

}  // namespace smddp::algo::arena
