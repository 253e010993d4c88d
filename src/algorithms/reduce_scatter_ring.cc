// SPDX-License-Identifier: Apache-2.0
// Ring reduce-scatter: the pass (the first half of ring all_reduce, and all of reduce_scatter),
// segmented and pipelined, and the reduce_scatter algorithm built on it.
//
// Pass steps (blocks of the `in` layout, shift k): at step s = 0..n-2 rank r sends block r+k-s
// to r+1 and receives block r+k-s-1 from r-1 into scratch, then work[b] = scratch op in[b] (the
// 3-operand reduce, so out-of-place needs no copy and in-place is the aliasing case). The block
// received at step s carries s+1 contributions; it is what is sent at step s+1. At step n-2 the
// received block r+k+1 is complete: it goes to `finalOut` when given, else stays in work; for
// AVG it is divided right there, so an all-gather pass spreads the owner's bits and every rank
// ends with identical values.
// all_reduce uses shift 0 with work = recv (rank r finishes block r+1); reduce_scatter uses
// shift n-1 (rank r finishes block r, written to recv) with the partials in scratch.
// Cost per rank: (n-1) * ceil(block / segment) messages, (n-1) blocks sent and received, (n-1)
// blocks of element reductions. Scratch: kPassDepth segments (+ the n blocks of partials for
// reduce_scatter: as large as its input).
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

struct ReduceScatterHooks {
  const CollectiveArgs& args;
  BlockLayout in;
  BlockLayout work;
  char* finalOut;  // the finished block's destination; null: work
  char* scratch;
  size_t depthBytes;  // one segment of scratch per depth slot
  int lastStep;
  int ranks;

  void* recvTarget(const RingSegment&, int depthSlot) { return scratch + depthSlot * depthBytes; }
  const void* sendSource(const RingSegment& s) {
    // Step 0 sends this rank's own contribution; later steps forward what was just reduced.
    return s.step == 0 ? in.at(s.block, s.offset) : work.at(s.block, s.offset);
  }
  void received(const RingSegment& s, int depthSlot) {
    const bool last = s.step == lastStep;
    void* dst = last && finalOut != nullptr ? finalOut + s.offset * in.elementSize
                                            : work.at(s.block, s.offset);
    reduce::reduce(args.dtype, args.op, dst, in.at(s.block, s.offset),
                   scratch + depthSlot * depthBytes, s.count);
    if (last && args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, dst, s.count, ranks);
  }
};

}  // namespace

void reduceScatterRingPass(Exec& exec, const CollectiveArgs& args, const BlockLayout& in,
                           const BlockLayout& work, void* finalOut, const RingGeometry& geo,
                           int shift, uint64_t msgBase) {
  const int n = exec.size();
  const size_t depthBytes = geo.segElems * in.elementSize;
  char* scratch = static_cast<char*>(exec.scratch(depthBytes * kPassDepth, 0));
  ReduceScatterHooks hooks{args,    in,         work,  static_cast<char*>(finalOut),
                           scratch, depthBytes, n - 2, n};
  runRingPass(exec, in, geo, shift, msgBase, hooks);
}

void reduceScatterRing(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const size_t total = args.count * static_cast<size_t>(n);
  const BlockLayout in = BlockLayout::split(args.send, total, n, es);
  const BlockLayout work = BlockLayout::split(exec.scratch(total * es, 1), total, n, es);
  const RingGeometry geo = ringGeometry(exec, in);
  requireTagRoom(exec, patterns::ringPassMessages(n, geo.segsPerBlock), "ring reduce_scatter");
  reduceScatterRingPass(exec, args, in, work, args.recv, geo, n - 1, 0);
  exec.waitAll();
}

}  // namespace smddp::algo
