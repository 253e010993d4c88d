// SPDX-License-Identifier: Apache-2.0
// Ring all_gather, segmented and pipelined; also the second half of ring all_reduce.
//
// Steps: copy send into blocks[rank] unless in place; then n-1 steps: at step s rank r sends block
// r-s to r+1 (step 0: its own block, straight from send) and receives block r-s-1 from r-1
// directly into its final place, so no staging copy is made. Each block moves in segments of
// segmentBytes, kPassDepth in flight (ring_pass.h).
// Cost per rank: (n-1) * ceil(count / segment) messages; (n-1) * bytes sent and received
// (bytes = one rank's block), i.e. (n-1)/n of the gathered size.
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/ring_pass.h"

namespace smddp::algo {
namespace {

struct AllGatherHooks {
  const BlockLayout& layout;
  int ownBlock;
  const char* ownSource;

  void* recvTarget(const RingSegment& s, int) { return layout.at(s.block, s.offset); }
  const void* sendSource(const RingSegment& s) {
    if (s.block == ownBlock) return ownSource + s.offset * layout.elementSize;
    return layout.at(s.block, s.offset);
  }
  void received(const RingSegment&, int) {}
};

}  // namespace

void allGatherRingPass(Exec& exec, const BlockLayout& layout, const RingGeometry& geo, int shift,
                       const void* ownSource, uint64_t msgBase) {
  AllGatherHooks hooks{layout, patterns::mod(exec.rank() + shift, exec.size()),
                       static_cast<const char*>(ownSource)};
  runRingPass(exec, layout, geo, shift, msgBase, hooks);
}

void allGatherRing(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const BlockLayout layout =
      args.blocks.empty()
          ? BlockLayout::split(args.recv, args.count * static_cast<size_t>(n), n,
                               args.elementSize())
          : BlockLayout::perBlock(args.blocks.data(), args.count, n, args.elementSize());
  const RingGeometry geo = ringGeometry(exec, layout);
  requireTagRoom(exec, patterns::ringPassMessages(n, geo.segsPerBlock), "ring all_gather");
  void* own = args.block(static_cast<size_t>(exec.rank()));
  if (own != args.send) std::memcpy(own, args.send, args.bytes());
  allGatherRingPass(exec, layout, geo, 0, args.send, 0);
  exec.waitAll();
}

}  // namespace smddp::algo
