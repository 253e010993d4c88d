// RingStep: the eager ring's waits, flow control and pending identity checks (shm_ring.h).
#include "algorithms/shm_ring.h"

#include <algorithm>
#include <limits>

namespace smddp::algo {

using transport::SharedArena;

static_assert(PendingChecks::kCapacity >= SharedArena::kRingDepth,
              "a root may have one check pending per ring entry");

RingStep::RingStep(Exec& exec) : exec_(exec), arena_(requireArena(exec)) {
  use_ = arena_.takeRingUse();
  constexpr uint64_t depth = SharedArena::kRingDepth;
  if (use_ >= depth && arena_.ringPeersDone() < use_ - depth + 1) waitForPeers(use_ - depth + 1);
  // A batch, or a check whose use comes round again: every peer released the uses up to
  // use_ - depth, so it published them, and that check settles without waiting. Settling it
  // here, not only when this rank waits, bounds the queue by the depth and never leaves a peer
  // waiting for a check this rank could settle.
  const PendingChecks& pending = exec.ringChecks();
  if (!pending.empty() && (pending.size() >= kSettleBatch || pending.front().use + depth <= use_)) {
    settle(exec, false);
  }
}

size_t RingStep::chunkBytes(const Exec& exec, size_t elementSize) {
  const size_t cap = requireArena(exec).ringPayload();
  return std::max(elementSize, cap / elementSize * elementSize);
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
      exec_.waitUntil([&] { return (done = word.load(std::memory_order_acquire)) >= need; }, r,
                      "finish with an eager broadcast entry", [&] { settle(exec_, false); });
    }
    least = std::min(least, done);
  }
  arena_.ringPeersDone() = least;
}

void RingStep::publish() {
  SharedArena::RingHeader& h = arena_.ringHeader(exec_.rank(), use_);
  h.seq.store(exec_.desc().seq, std::memory_order_relaxed);
  h.shape.store(exec_.desc().shape, std::memory_order_relaxed);
  h.stamp.store(use_ + 1, std::memory_order_release);
}

void RingStep::await(int peer) {
  const std::atomic<uint64_t>& stamp = arena_.ringHeader(peer, use_).stamp;
  exec_.waitUntil([&] { return stamp.load(std::memory_order_acquire) > use_; }, peer,
                  "publish its eager broadcast data", [&] { settle(exec_, false); });
  checkIdentity(exec_, arena_, peer, use_, exec_.desc());
}

void RingStep::release(bool deferCheck) {
  if (deferCheck) exec_.ringChecks().push(DeferredCheck{use_, exec_.desc()});
  arena_.ringReleased() = use_ + 1;
  storeConsumed(exec_, arena_);
}

void RingStep::settle(Exec& exec, bool block) {
  PendingChecks& pending = exec.ringChecks();
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
  // Every pending use is below ringReleased() by the time this runs.
  const PendingChecks& pending = exec.ringChecks();
  const uint64_t consumed = pending.empty() ? arena.ringReleased() : pending.front().use;
  arena.ringConsumed(exec.rank()).store(consumed, std::memory_order_release);
}

void RingStep::checkIdentity(const Exec& exec, SharedArena& arena, int peer, uint64_t use,
                             const CollectiveDesc& mine) {
  const SharedArena::RingHeader& h = arena.ringHeader(peer, use);
  checkIdentityWords(exec, peer, h.seq.load(std::memory_order_relaxed),
                     h.shape.load(std::memory_order_relaxed), mine);
}

}  // namespace smddp::algo
