// SPDX-License-Identifier: Apache-2.0
// Pipelined chain broadcast for large messages.
//
// Steps: ranks form the chain root, root+1, ..., root-1 (mod n). The buffer is cut into G segments
// of segmentBytes; segment g travels down the chain with message index g. A non-root receives
// segment g from its predecessor directly into recv and forwards it to its successor. Bounded
// counters (depth D = kChainDepth): receives run D segments ahead (segments [g, g+D) posted while g
// is awaited) and at most D sends are in flight (the send of segment g first waits for that of g -
// D). The root copies send -> recv when not in place, overlapping its sends. Cost: every rank but
// the last sends G messages, every non-root receives G: bytes on the wire per rank = bytes; time ~
// (n - 2 + G) segment transfers.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/patterns/ring.h"

namespace smddp::algo {
namespace {
constexpr size_t kChainDepth = 4;
}

void broadcastChain(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int pos = patterns::mod(exec.rank() - args.root, n);  // position in the chain
  const size_t es = args.elementSize();
  const size_t segElems = std::min(patterns::segmentElems(exec.segmentBytes(), es), args.count);
  const size_t segments = patterns::segmentCount(args.count, segElems);
  requireTagRoom(exec, segments, "chain broadcast");
  const int prev = pos > 0 ? patterns::mod(exec.rank() - 1, n) : -1;
  const int next = pos < n - 1 ? patterns::mod(exec.rank() + 1, n) : -1;
  const char* source = static_cast<const char*>(pos == 0 ? args.send : args.recv);
  char* recv = static_cast<char*>(args.recv);
  auto seg = [&](size_t g) { return patterns::segmentOf(args.count, segElems, g); };

  Exec::Handle recvs[kChainDepth] = {}, sends[kChainDepth] = {};
  if (prev >= 0) {
    for (size_t g = 0; g < std::min(segments, kChainDepth); ++g) {
      recvs[g] = exec.irecv(prev, g, recv + seg(g).begin * es, seg(g).count * es);
    }
  }
  for (size_t g = 0; g < segments; ++g) {
    const size_t d = g % kChainDepth;
    if (prev >= 0) {
      exec.wait(recvs[d]);
      const size_t ahead = g + kChainDepth;
      if (ahead < segments) {
        recvs[d] = exec.irecv(prev, ahead, recv + seg(ahead).begin * es, seg(ahead).count * es);
      }
    }
    if (next < 0) continue;
    if (g >= kChainDepth) exec.wait(sends[d]);
    sends[d] = exec.isend(next, g, source + seg(g).begin * es, seg(g).count * es);
  }
  if (pos == 0 && !args.inPlace()) std::memcpy(args.recv, args.send, args.bytes());
  exec.waitAll();
}

}  // namespace smddp::algo
