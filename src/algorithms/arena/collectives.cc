// SPDX-License-Identifier: Apache-2.0
// broadcast, all_gather and barrier through the host's shared-memory arena (slot_step.h).
//
// broadcast (arena), per chunk of one slot: the root copies the chunk into its slot and publishes;
//   every other rank waits for it, copies it out and releases. On the first chunk the others
//   also publish their identity and the root checks it, so ranks that disagree on the root fail
//   (kMismatch) instead of the root returning alone. With one chunk the root does not wait for
//   that: it checks in its next collective, before it releases a use (SlotStep::settle; the
//   others check the root's identity at once), so a root may run one broadcast ahead of its
//   peers (small broadcasts take the eager ring, below, and run further). With more chunks it
//   checks on the first. Slots
//   alternate, so the root fills chunk k+1 while the others copy chunk k: each byte is copied
//   twice (in once, out once per reader), in parallel, through cache.
// broadcast (arena_eager), per chunk of the ring's payload: the root copies the chunk into its next
//   ring entry and publishes; every other rank publishes its identity in its own entry, waits for
//   the root's, checks it, copies the chunk out and releases. The root checks its peers'
//   identities later (eager_ring.h), so it runs up to the ring's depth (kEagerDepth uses) ahead of
//   the slowest peer instead of one: with more ranks than cores a root fills many entries per
//   time slice and each peer drains many in its own. Bytes copied as for arena.
// all_gather (arena), per chunk of half a slot of every rank's block: each rank copies its chunk in
//   and publishes; each copies every peer's chunk out and releases. Bytes copied per rank: its
//   block once in, the n-1 others out.
// barrier (arena): publish, wait for every rank's publication, release: one cache-line write per
//   rank and n-1 reads; no data.
#include "algorithms/arena/collectives.h"

#include <algorithm>
#include <cstring>

#include "algorithms/arena/eager_ring.h"
#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {

void broadcast(Exec& exec, const CollectiveArgs& args) {
  const bool root = exec.rank() == args.root;
  const size_t chunk = SlotStep::chunkBytes(exec, args.elementSize());
  const bool oneChunk = args.bytes() <= chunk;
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    SlotStep step(exec);
    if (root || off == 0) step.acquire();  // later chunks: non-roots write nothing but `consumed`
    if (root) {
      std::memcpy(step.mine(), in + off, bytes);
      step.publish(1);
      if (out != in) std::memcpy(out + off, step.mine(), bytes);  // from cache, not memory
      // Every rank entered the same broadcast (same root): checked now, or deferred (above).
      if (off == 0 && !oneChunk) step.awaitAll(1);
    } else {
      if (off == 0) step.publish(1);  // our identity only, for the root's check
      step.await(args.root, 1);
      std::memcpy(out + off, step.slotOf(args.root), bytes);
    }
    step.release();
    if (root && oneChunk) step.deferCheck();
  }
}

void broadcastEager(Exec& exec, const CollectiveArgs& args) {
  const bool root = exec.rank() == args.root;
  const size_t chunk = EagerStep::chunkBytes(exec, args.elementSize());
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    EagerStep step(exec);
    if (root) {
      std::memcpy(step.mine(), in + off, bytes);
      step.publish(bytes);
      if (out != in) std::memcpy(out + off, in + off, bytes);
    } else {
      step.publish();  // our identity only, for the root's check
      step.await(args.root);
      std::memcpy(out + off, step.of(args.root), bytes);
    }
    step.release(root);
  }
}

void allGather(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t chunk = SlotStep::chunkBytes(exec, args.elementSize(), 2);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* own = static_cast<unsigned char*>(args.block(static_cast<size_t>(exec.rank())));
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    SlotStep step(exec);
    step.acquire();
    std::memcpy(step.mine(), in + off, bytes);
    step.publish(1);
    if (own != in) std::memcpy(own + off, in + off, bytes);
    for (int i = 1; i < n; ++i) {
      const int q = (exec.rank() + i) % n;  // staggered: ranks do not all read one slot first
      step.await(q, 1);
      std::memcpy(static_cast<unsigned char*>(args.block(static_cast<size_t>(q))) + off,
                  step.slotOf(q), bytes);
    }
    step.release();
  }
}

void barrier(Exec& exec, const CollectiveArgs& /*args*/) {
  SlotStep step(exec);
  step.acquire();
  step.publish(1);
  step.awaitAll(1);
  step.release();
}

}  // namespace smddp::algo::arena
