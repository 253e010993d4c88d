// SPDX-License-Identifier: Apache-2.0
// reduce_scatter through the host's shared-memory arena (slot_step.h has the protocol).
//
// Per use, with L = a chunk's bytes / n in whole elements, at least one (at most what is left of
// a block): every rank copies elements [off, off + L) of each of its n input blocks into its slot
// (block q at q * L), publishes, waits for every peer, then reduces piece `rank` of the n slots,
// in rank order, straight into its output, and releases. Each rank reads 1/n of every peer's slot.
// Cost per rank: its whole input copied in once, (n-1) reductions of its own block; two
// synchronisations per use (publish, release). In place (recv is this rank's block of send)
// works: a use copies its pieces in before it writes the output.
#include <algorithm>
#include <cstring>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {

void reduceScatter(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t es = args.elementSize();
  const size_t pieceElems = piecePerRank(exec, es) / es;
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  const size_t blockBytes = args.bytes();
  for (size_t off = 0; off < blockBytes; off += pieceElems * es) {
    const size_t bytes = std::min(pieceElems * es, blockBytes - off);
    const size_t count = bytes / es;
    SlotStep step(exec);
    step.acquire();
    for (int q = 0; q < n; ++q) {
      std::memcpy(step.mine() + static_cast<size_t>(q) * bytes,
                  in + static_cast<size_t>(q) * blockBytes + off, bytes);
    }
    step.publish(1);
    step.awaitAll(1);
    reduceSlots(step, args, n, out + off, static_cast<size_t>(rank) * bytes, count);
    step.release();
  }
}

}  // namespace smddp::algo::arena
