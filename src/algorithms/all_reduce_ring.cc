// SPDX-License-Identifier: Apache-2.0
// Ring all_reduce for large messages = ring reduce-scatter pass + ring all-gather pass, both
// segmented and pipelined (ring_pass.h).
//
// Steps: (1) reduce-scatter (reduce_scatter_ring.cc): after n-1 steps rank r owns the finished
// chunk r+1 (already divided for AVG); (2) all-gather with shift 1: n-1 steps spread every
// finished chunk to every rank, received in place in recv.
// Cost per rank: 2(n-1) * ceil(count / n / segment) messages; 2(n-1)/n * bytes sent and the same
// received; (n-1)/n * count element reductions. Messages: pass 1 uses [0, (n-1)S), pass 2
// [(n-1)S, 2(n-1)S), S = segments per chunk. With n = 2 this moves the same bytes as recursive
// doubling (half the buffer each way, twice) but reduces only half the buffer per rank.
#include "algorithms/algorithms.h"
#include "algorithms/ring_pass.h"

namespace smddp::algo {

void allReduceRing(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const BlockLayout send = BlockLayout::split(args.send, args.count, n, es);
  const BlockLayout recv = BlockLayout::split(args.recv, args.count, n, es);
  const RingGeometry geo = ringGeometry(exec, recv);
  const uint64_t passMessages = patterns::ringPassMessages(n, geo.segsPerBlock);
  requireTagRoom(exec, 2 * passMessages, "ring all_reduce");
  reduceScatterRingPass(exec, args, send, recv, nullptr, geo, 0, 0);
  const int owned = patterns::mod(exec.rank() + 1, n);
  allGatherRingPass(exec, recv, geo, 1, recv.at(owned, 0), passMessages);
  exec.waitAll();
}

}  // namespace smddp::algo
