// SPDX-License-Identifier: Apache-2.0
// RingStep: the eager ring's waits, flow control and pending identity checks (shm_ring.h).
#include "algorithms/shm_ring.h"

#include <algorithm>
#include <limits>

#include "common/prefetch.h"

namespace smddp::algo {

using transport::SharedArena;

static_assert(PendingChecks::kCapacity >= SharedArena::kRingDepth,
              "a root may have one check pending per ring entry");

RingStep::RingStep(Exec& exec) : exec_(exec), arena_(requireArena(exec)) {
  use_ = exec.ring().nextUse++;
  constexpr uint64_t depth = SharedArena::kRingDepth;
  if (use_ >= depth && exec.ring().peersDone < use_ - depth + 1) waitForPeers(use_ - depth + 1);
  // A batch, or a check whose use comes round again: every peer released the uses up to
  // use_ - depth, so it published them, and that check settles without waiting. Settling it
  // here, not only when this rank waits, bounds the queue by the depth and never leaves a peer
  // waiting for a check this rank could settle.
  const PendingChecks& pending = exec.ring().checks;
  if (!pending.empty() && (pending.size() >= kSettleBatch || pending.front().use + depth <= use_)) {
    settle(exec, false);
  }
}

size_t RingStep::chunkBytes(const Exec& exec, size_t elementSize) {
  return wholeElements(requireArena(exec).ringPayload(), elementSize);
}

// Reads every peer's `ringConsumed` (which the last pass through here cached the least of) and
// waits for those below `need`, settling this rank's own pending checks meanwhile: a peer may be
// waiting for them.
void RingStep::waitForPeers(uint64_t need) {
  uint64_t least = std::numeric_limits<uint64_t>::max();
  for (int r = 0; r < exec_.size(); ++r) {
    if (r == exec_.rank()) continue;
    const std::atomic<uint64_t>& word = arena_.ringConsumed(r);
    uint64_t done = word.load(std::memory_order_acquire);
    if (done < need) {
      exec_.waitWord(word, need, r, "finish with an eager broadcast entry", settleSome);
      done = word.load(std::memory_order_acquire);
    }
    least = std::min(least, done);
  }
  exec_.ring().peersDone = least;
}

void RingStep::publish(size_t dataBytes) {
  SharedArena::RingHeader& h = arena_.ringHeader(exec_.rank(), use_);
  h.seq.store(exec_.desc().seq, std::memory_order_relaxed);
  h.shape.store(exec_.desc().shape, std::memory_order_relaxed);
  h.stamp.store(use_ + 1, std::memory_order_release);
  // The next use's entry, as much of it as this one wrote (a loop repeats its size): its peers
  // read it kRingDepth uses ago, so its lines are theirs until taken back.
  prefetchForWrite(&arena_.ringHeader(exec_.rank(), use_ + 1),
                   std::min(sizeof(SharedArena::RingHeader) + dataBytes, kPrefetchBytes));
}

void RingStep::await(int peer) {
  const std::atomic<uint64_t>& stamp = arena_.ringHeader(peer, use_).stamp;
  exec_.waitWord(stamp, use_ + 1, peer, "publish its eager broadcast data", settleSome);
  checkIdentity(exec_, arena_, peer, use_, exec_.desc());
}

void RingStep::release(bool deferCheck) {
  RingState& ring = exec_.ring();
  if (deferCheck) ring.checks.push(DeferredCheck{use_, exec_.desc()});
  ring.released = use_ + 1;
  storeConsumed(exec_, arena_);
}

void RingStep::settle(Exec& exec, bool block) {
  PendingChecks& pending = exec.ring().checks;
  if (pending.empty()) return;
  SharedArena& arena = requireArena(exec);
  bool popped = false;  // since the last store of this rank's `ringConsumed`
  while (!pending.empty()) {
    const DeferredCheck& check = pending.front();
    bool published = true;
    for (int r = 0; r < exec.size(); ++r) {
      if (r == exec.rank()) continue;
      const std::atomic<uint64_t>& stamp = arena.ringHeader(r, check.use).stamp;
      if (stamp.load(std::memory_order_acquire) <= check.use) {
        if (!block) {
          published = false;
          break;
        }
        if (popped) storeConsumed(exec, arena);  // the peer may be waiting for it
        popped = false;
        exec.waitWord(stamp, check.use + 1, r,
                      "enter an earlier broadcast from this rank (eager ring)");
      }
      checkIdentity(exec, arena, r, check.use, check.desc);
    }
    if (!published) break;
    pending.pop();
    popped = true;
  }
  if (popped) storeConsumed(exec, arena);
}

void RingStep::storeConsumed(Exec& exec, SharedArena& arena) {
  // Every pending use is below ring.released by the time this runs. A root with checks pending
  // mostly stores what the word already holds (the oldest pending use): skipped.
  const RingState& ring = exec.ring();
  const uint64_t consumed = ring.checks.empty() ? ring.released : ring.checks.front().use;
  std::atomic<uint64_t>& word = arena.ringConsumed(exec.rank());
  if (word.load(std::memory_order_relaxed) != consumed) {
    word.store(consumed, std::memory_order_release);
  }
}

void RingStep::checkIdentity(const Exec& exec, SharedArena& arena, int peer, uint64_t use,
                             const CollectiveDesc& mine) {
  const SharedArena::RingHeader& h = arena.ringHeader(peer, use);
  checkIdentityWords(exec, peer, h.seq.load(std::memory_order_relaxed),
                     h.shape.load(std::memory_order_relaxed), mine);
}

}  // namespace smddp::algo
