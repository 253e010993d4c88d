// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter pass (the first half of ring all_reduce), segmented and pipelined.
//
// Steps (chunks c = patterns::ringChunk, shift 0): at step s = 0..n-2 rank r sends chunk r-s to
// r+1 and receives chunk r-s-1 from r-1 into scratch, then recv[c] = scratch op send[c] (the
// 3-operand reduce, so out-of-place needs no copy and in-place is the aliasing case). The chunk
// received at step s carries s+1 contributions; it is what is sent at step s+1. At step n-2 the
// received chunk r+1 is complete; for AVG it is divided right there, so the all-gather pass
// spreads the owner's bits and every rank ends with identical values.
// Cost per rank: (n-1) * ceil(chunk / segment) messages, (n-1)/n * bytes sent and received,
// (n-1)/n * count element reductions. Scratch: kPassDepth segments.
#include <cstring>

#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

struct ReduceScatterHooks {
  const CollectiveArgs& args;
  BlockLayout send;
  BlockLayout recv;
  char* scratch;
  size_t depthBytes;  // one segment of scratch per depth slot
  int lastStep;
  int ranks;

  void* recvTarget(const RingSegment&, int depthSlot) { return scratch + depthSlot * depthBytes; }
  const void* sendSource(const RingSegment& s) {
    // Step 0 sends this rank's own contribution; later steps forward what was just reduced.
    return s.step == 0 ? send.at(s.block, s.offset) : recv.at(s.block, s.offset);
  }
  void received(const RingSegment& s, int depthSlot) {
    void* dst = recv.at(s.block, s.offset);
    reduce::reduce(args.dtype, args.op, dst, send.at(s.block, s.offset),
                   scratch + depthSlot * depthBytes, s.count);
    if (s.step == lastStep && args.op == ReduceOp::kAvg) {
      reduce::finishAverage(args.dtype, dst, s.count, ranks);
    }
  }
};

}  // namespace

void reduceScatterRingPass(Exec& exec, const CollectiveArgs& args, const RingGeometry& geo,
                           uint64_t msgBase) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const size_t depthBytes = geo.segElems * es;
  char* scratch = static_cast<char*>(exec.scratch(depthBytes * kPassDepth, 0));
  ReduceScatterHooks hooks{args,
                           BlockLayout::split(args.send, args.count, n, es),
                           BlockLayout::split(args.recv, args.count, n, es),
                           scratch,
                           depthBytes,
                           n - 2,
                           n};
  runRingPass(exec, hooks.recv, geo, 0, msgBase, hooks);
}

}  // namespace smddp::algo
