// SPDX-License-Identifier: Apache-2.0
// reduce to any root through the host's shared-memory arena (slot_step.h has the protocol).
//
// Per chunk of one slot: every rank copies its chunk in and publishes; the root waits for every
// peer, reduces the n slots in rank order into its output and releases; the others release at
// once (the slot protocol keeps their slot until the root released it). The others read nobody's
// slot, so, as the root of a broadcast, they check the peers' identities later: with one chunk in
// their next collective (SlotStep::deferCheck), with more on the first chunk.
// Cost: every rank copies its input in once; the root makes n-1 reductions of the buffer.
#include <algorithm>
#include <cstring>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {

void reduce(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const bool root = exec.rank() == args.root;
  const size_t es = args.elementSize();
  const size_t chunk = SlotStep::chunkBytes(exec, es);
  const bool oneChunk = args.bytes() <= chunk;
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    const size_t count = bytes / es;
    SlotStep step(exec);
    step.acquire();
    std::memcpy(step.mine(), in + off, bytes);
    step.publish(1);
    if (root) {
      step.awaitAll(1);
      reduceSlots(step, args, n, out + off, 0, count);
    } else if (off == 0 && !oneChunk) {
      step.awaitAll(1);  // every rank entered the same reduce: checked now (see above)
    }
    step.release();
    if (!root && oneChunk) step.deferCheck();
  }
}

}  // namespace smddp::algo::arena
