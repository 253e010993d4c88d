// SPDX-License-Identifier: Apache-2.0
// gather and scatter through the host's shared-memory arena (slot_step.h has the protocol).
//
// gather, per chunk of one slot: every rank copies its chunk in and publishes; the root waits for
// every peer and copies each slot into that rank's block; all release. The others read nobody,
// so they check the peers' identities later (as reduce.cc says).
// scatter, per use of L = a chunk / n elements of every block: the root copies piece [off, off+L)
// of each block q into its slot at q * L and publishes; every other rank publishes its identity,
// waits for the root, checks it and copies piece `rank` out; all release. The root reads nobody
// and checks the others later, as a broadcast's root.
// Cost: every byte is copied twice (in once, out once), through cache.
#include <algorithm>
#include <cstring>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {

void gather(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const bool root = exec.rank() == args.root;
  const size_t chunk = SlotStep::chunkBytes(exec, args.elementSize());
  const bool oneChunk = args.bytes() <= chunk;
  const auto* in = static_cast<const unsigned char*>(args.send);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    SlotStep step(exec);
    step.acquire();
    std::memcpy(step.mine(), in + off, bytes);
    step.publish(1);
    if (root) {
      for (int i = 0; i < n; ++i) {
        const int q = (exec.rank() + i) % n;  // our own first: the peers' may still be coming
        if (q != exec.rank()) step.await(q, 1);
        std::memcpy(static_cast<unsigned char*>(args.block(static_cast<size_t>(q))) + off,
                    step.slotOf(q), bytes);
      }
    } else if (off == 0 && !oneChunk) {
      step.awaitAll(1);
    }
    step.release();
    if (!root && oneChunk) step.deferCheck();
  }
}

void scatter(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const bool root = rank == args.root;
  const size_t es = args.elementSize();
  const size_t piece = piecePerRank(exec, es);
  const bool oneUse = args.bytes() <= piece;
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += piece) {
    const size_t bytes = std::min(piece, args.bytes() - off);
    SlotStep step(exec);
    if (root || off == 0) step.acquire();
    if (root) {
      for (int q = 0; q < n; ++q) {
        std::memcpy(step.mine() + static_cast<size_t>(q) * bytes,
                    static_cast<const unsigned char*>(args.sendBlock(static_cast<size_t>(q))) + off,
                    bytes);
      }
      step.publish(1);
      std::memcpy(out + off, step.mine() + static_cast<size_t>(rank) * bytes, bytes);
      if (off == 0 && !oneUse) step.awaitAll(1);
    } else {
      if (off == 0) step.publish(1);  // our identity only, for the root's check
      step.await(args.root, 1);
      std::memcpy(out + off, step.slotOf(args.root) + static_cast<size_t>(rank) * bytes, bytes);
    }
    step.release();
    if (root && oneUse) step.deferCheck();
  }
}

}  // namespace smddp::algo::arena
