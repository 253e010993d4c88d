// SPDX-License-Identifier: Apache-2.0
// Fixed-order reductions (SMDDP_DETERMINISTIC): rank b owns block b of the buffer (ring blocks,
// patterns/ring.h) and reduces it from every rank's input in rank order,
// ((x0 op x1) op x2) ... op x(n-1), then AVG divides; the other steps only move bytes. So each
// element's bits depend on the inputs and the world size alone: not on the hosts, the ranks per
// host, the chunking or which algorithm the selector would have chosen. The arena algorithms
// that reduce in that same order (arena_direct, arena_split, arena reduce_scatter, arena reduce)
// give the same bits on one host (registry.cc: deterministicAlgorithm).
//   1. gather my block: pairwise exchange (all_to_all_pairwise's schedule): block q of my input
//      to rank q, block `me` of rank p's input into scratch slot p; my own copied;
//   2. reduce the n slots in rank order: into the output (all_reduce: my block of it;
//      reduce_scatter: the whole output; reduce: the root's block of its output, or scratch);
//   3. all_reduce: the reduced blocks go to every rank (pairwise); reduce: to the root.
// Cost per rank: 2(n-1)/n x bytes sent and received (all_reduce; half for reduce_scatter), as
// the ring, in 2(n-1) messages without segmenting; (n-1)/n x bytes of reductions. Scratch: n
// blocks (the input's size).
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

constexpr int kWindow = 8;  // pairwise steps in flight

// One pairwise schedule (all_to_all_pairwise's): at step s, sendOf(s) posts the send to rank
// me + s and returns its handle, recvOf(s) posts the receive from rank me - s. kWindow steps are
// in flight; a window's sends are awaited before its receives (a receive's error must not
// strand a peer).
template <typename Send, typename Recv>
void pairwise(Exec& exec, uint64_t msg, Send sendOf, Recv recvOf) {
  const int n = exec.size();
  for (int first = 1; first < n; first += kWindow) {
    const int last = std::min(n, first + kWindow);
    for (int s = first; s < last; ++s) recvOf(s, msg);
    Exec::Handle sends[kWindow];
    for (int s = first; s < last; ++s) sends[s - first] = sendOf(s, msg);
    for (int s = first; s < last; ++s) exec.wait(sends[s - first]);
    exec.waitAll();
  }
}

// Step 1: block `me` of every rank's input into slots (rank p's at p * slotBytes).
void gatherMyBlock(Exec& exec, const BlockLayout& in, char* slots, size_t slotBytes) {
  const int n = exec.size();
  const int me = exec.rank();
  const size_t mine = in.elems(me) * in.elementSize;
  std::memcpy(slots + static_cast<size_t>(me) * slotBytes, in.at(me, 0), mine);
  pairwise(
      exec, 0,
      [&](int s, uint64_t msg) {
        const int to = (me + s) % n;
        return exec.isend(to, msg, in.at(to, 0), in.elems(to) * in.elementSize);
      },
      [&](int s, uint64_t msg) {
        const int from = (me - s + n) % n;
        exec.irecv(from, msg, slots + static_cast<size_t>(from) * slotBytes, mine);
      });
}

// Step 2: the n slots reduced in rank order into dst.
void reduceInRankOrder(const CollectiveArgs& args, int n, const char* slots, size_t slotBytes,
                       size_t count, void* dst) {
  if (count == 0) return;
  reduce::reduce(args.dtype, args.op, dst, slots, slots + slotBytes, count);
  for (int p = 2; p < n; ++p) {
    reduce::reduce(args.dtype, args.op, dst, dst, slots + static_cast<size_t>(p) * slotBytes,
                   count);
  }
  if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, dst, count, n);
}

}  // namespace

void allReduceFixedOrder(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int me = exec.rank();
  const size_t es = args.elementSize();
  const BlockLayout in = BlockLayout::split(args.send, args.count, n, es);
  const BlockLayout out = BlockLayout::split(args.recv, args.count, n, es);
  const size_t slotBytes = in.maxElems() * es;
  char* slots = static_cast<char*>(exec.scratch(slotBytes * static_cast<size_t>(n), 0));
  gatherMyBlock(exec, in, slots, slotBytes);  // complete: in place, the input may now change
  reduceInRankOrder(args, n, slots, slotBytes, out.elems(me), out.at(me, 0));
  pairwise(
      exec, 1,
      [&](int s, uint64_t msg) {
        return exec.isend((me + s) % n, msg, out.at(me, 0), out.elems(me) * es);
      },
      [&](int s, uint64_t msg) {
        const int from = (me - s + n) % n;
        exec.irecv(from, msg, out.at(from, 0), out.elems(from) * es);
      });
}

void reduceScatterFixedOrder(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const BlockLayout in = BlockLayout::split(args.send, args.count * static_cast<size_t>(n), n, es);
  const size_t slotBytes = args.count * es;
  char* slots = static_cast<char*>(exec.scratch(slotBytes * static_cast<size_t>(n), 0));
  gatherMyBlock(exec, in, slots, slotBytes);
  reduceInRankOrder(args, n, slots, slotBytes, args.count, args.recv);
}

void reduceFixedOrder(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int me = exec.rank();
  const int root = args.root;
  const size_t es = args.elementSize();
  const BlockLayout in = BlockLayout::split(args.send, args.count, n, es);
  const BlockLayout out = BlockLayout::split(args.recv, args.count, n, es);
  const size_t slotBytes = in.maxElems() * es;
  char* slots = static_cast<char*>(exec.scratch(slotBytes * static_cast<size_t>(n), 0));
  gatherMyBlock(exec, in, slots, slotBytes);
  void* mine = me == root ? static_cast<void*>(out.at(me, 0)) : exec.scratch(slotBytes, 1);
  reduceInRankOrder(args, n, slots, slotBytes, in.elems(me), mine);
  if (me != root) {
    exec.wait(exec.isend(root, 1, mine, in.elems(me) * es));
    return;
  }
  for (int p = 0; p < n; ++p) {
    if (p != me) exec.irecv(p, 1, out.at(p, 0), out.elems(p) * es);
  }
  exec.waitAll();
}

}  // namespace smddp::algo
