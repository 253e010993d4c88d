// SPDX-License-Identifier: Apache-2.0
// One segmented, pipelined pass around the ring, shared by ring all_reduce (a reduce-scatter pass
// then an all-gather pass) and ring all_gather (one all-gather pass).
//
// A pass has (n-1) * S units u = step * S + g: step s of patterns/ring.h, segment g of its block
// (S = segments of the largest block). Unit u sends one segment to the successor and receives one
// from the predecessor; the segment sent at unit u is the one received at unit u - S (same
// segment, previous step), so it is always finished before it is sent.
//
// Bounded counters, with depth D = kPassDepth:
//   - receives run D units ahead: before unit u is processed, units [u, u + D) have receives
//     posted; unit u's receive lands in depth slot u mod D (its scratch area for reductions),
//     and that slot is re-posted for unit u + D only after unit u's data was consumed;
//   - at most D sends are in flight: the send of unit u reuses handle slot u mod D, so it first
//     waits for the send of unit u - D.
// While unit u is reduced, the transfers of units u+1 .. u+D-1 proceed. Deadlock freedom: if every
// rank has finished the units below u, every rank has posted receives up to u + D - 1, so the send
// of unit u - D and the receive of unit u can complete on every rank.
// Sends still in flight when a pass returns are awaited by the algorithm's final waitAll(). A later
// pass may overwrite a block such a send reads only with that block's finished value, which exists
// only after our send was received (the finished value depends on it), so this is safe.
#pragma once

#include <algorithm>
#include <cstdint>

#include "algorithms/algorithms.h"
#include "algorithms/collective.h"
#include "algorithms/exec.h"
#include "algorithms/patterns/ring.h"

namespace smddp::algo {

constexpr int kPassDepth = 4;

// Where the n blocks of a pass live: either one buffer split by patterns::ringChunk (list ==
// nullptr) or one pointer per block, each of count elements, or of sizes[b] elements (count is
// then the largest; hosts of different sizes: hier::HostBlocks, hierarchical.h).
struct BlockLayout {
  char* base = nullptr;
  void* const* list = nullptr;
  size_t count = 0;
  int n = 1;
  size_t elementSize = 1;
  const size_t* sizes = nullptr;

  static BlockLayout split(const void* buffer, size_t count, int n, size_t elementSize) {
    return BlockLayout{static_cast<char*>(const_cast<void*>(buffer)), nullptr, count, n,
                       elementSize};
  }
  static BlockLayout perBlock(void* const* list, size_t count, int n, size_t elementSize) {
    return BlockLayout{nullptr, list, count, n, elementSize};
  }
  // `list` and `sizes` must outlive the layout.
  static BlockLayout varied(void* const* list, const size_t* sizes, int n, size_t elementSize) {
    size_t largest = 0;
    for (int b = 0; b < n; ++b) largest = std::max(largest, sizes[b]);
    return BlockLayout{nullptr, list, largest, n, elementSize, sizes};
  }
  size_t elems(int b) const {
    if (list) return sizes ? sizes[b] : count;
    return patterns::ringChunk(count, n, b).count;
  }
  size_t maxElems() const { return list ? count : patterns::ringMaxChunk(count, n); }
  char* at(int b, size_t elemOffset) const {
    if (list) return static_cast<char*>(list[b]) + elemOffset * elementSize;
    return base + (patterns::ringChunk(count, n, b).begin + elemOffset) * elementSize;
  }
};

// Segment size (elements, clamped to the largest block) and segments per block of a pass.
struct RingGeometry {
  size_t segElems = 1;
  size_t segsPerBlock = 0;
};

inline RingGeometry ringGeometry(const Exec& exec, const BlockLayout& layout) {
  const size_t maxBlock = std::max<size_t>(1, layout.maxElems());
  RingGeometry g;
  g.segElems = std::min(patterns::segmentElems(exec.segmentBytes(), layout.elementSize), maxBlock);
  g.segsPerBlock = patterns::segmentCount(layout.maxElems(), g.segElems);
  return g;
}

// One segment of one unit: block b, elements [offset, offset + count) of it.
struct RingSegment {
  int step = 0;
  int block = 0;
  size_t offset = 0;
  size_t count = 0;
};

inline RingSegment ringSegment(const Exec& exec, const BlockLayout& layout, const RingGeometry& geo,
                               int shift, size_t unit, bool send) {
  RingSegment s;
  s.step = static_cast<int>(unit / geo.segsPerBlock);
  const size_t g = unit % geo.segsPerBlock;
  s.block = send ? patterns::ringSendBlock(exec.rank(), exec.size(), shift, s.step)
                 : patterns::ringRecvBlock(exec.rank(), exec.size(), shift, s.step);
  const patterns::Range r = patterns::segmentOf(layout.elems(s.block), geo.segElems, g);
  s.offset = r.begin;
  s.count = r.count;
  return s;
}

// Runs one pass. Hooks:
//   void* recvTarget(const RingSegment&, int depthSlot)   where the segment is received
//   const void* sendSource(const RingSegment&)             what the segment sends
//   void received(const RingSegment&, int depthSlot)      the segment has arrived
template <class Hooks>
void runRingPass(Exec& exec, const BlockLayout& layout, const RingGeometry& geo, int shift,
                 uint64_t msgBase, Hooks& hooks) {
  const int n = exec.size();
  const int next = patterns::ringNext(exec.rank(), n);
  const int prev = patterns::ringPrev(exec.rank(), n);
  const size_t units = patterns::ringPassMessages(n, geo.segsPerBlock);
  Exec::Handle recvs[kPassDepth] = {}, sends[kPassDepth] = {};
  bool recvLive[kPassDepth] = {}, sendLive[kPassDepth] = {};
  auto postRecv = [&](size_t u) {
    const RingSegment in = ringSegment(exec, layout, geo, shift, u, false);
    if (in.count == 0) return;
    const int d = static_cast<int>(u % kPassDepth);
    recvs[d] =
        exec.irecv(prev, msgBase + u, hooks.recvTarget(in, d), in.count * layout.elementSize);
    recvLive[d] = true;
  };
  for (size_t u = 0; u < std::min<size_t>(units, kPassDepth); ++u) postRecv(u);
  for (size_t u = 0; u < units; ++u) {
    const int d = static_cast<int>(u % kPassDepth);
    if (sendLive[d]) exec.wait(sends[d]);
    const RingSegment out = ringSegment(exec, layout, geo, shift, u, true);
    sendLive[d] = out.count > 0;
    if (sendLive[d]) {
      sends[d] =
          exec.isend(next, msgBase + u, hooks.sendSource(out), out.count * layout.elementSize);
    }
    if (recvLive[d]) {
      exec.wait(recvs[d]);
      recvLive[d] = false;
      hooks.received(ringSegment(exec, layout, geo, shift, u, false), d);
    }
    if (u + kPassDepth < units) postRecv(u + kPassDepth);
  }
}

// Reduce-scatter pass (reduce_scatter_ring.cc): the blocks of `in` reduced over all ranks into
// `work`; afterwards this rank's block rank+1+shift holds the reduction (divided by n for AVG),
// in `finalOut` when given, else in work.
void reduceScatterRingPass(Exec& exec, const CollectiveArgs& args, const BlockLayout& in,
                           const BlockLayout& work, void* finalOut, const RingGeometry& geo,
                           int shift, uint64_t msgBase);

// All-gather pass: every block ends up on every rank. ownSource is what this rank sends for its
// own block (rank + shift) at step 0; every other block is sent from where it was received.
void allGatherRingPass(Exec& exec, const BlockLayout& layout, const RingGeometry& geo, int shift,
                       const void* ownSource, uint64_t msgBase);

}  // namespace smddp::algo
