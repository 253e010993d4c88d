// SPDX-License-Identifier: Apache-2.0
// Collectives on tensors in the ranks' shareable memory (pool.h), read and written in place by
// their peers: no copy through the arena's slots. Every rank first publishes, in one slot use,
// where its buffers lie (PoolRef; a buffer outside its pool has none) and reads its peers'; from
// these all ranks take the same decision: in place when every buffer the form reads or writes in
// a peer is pool memory, else the arena algorithm that would have run (arena_split, arena), so
// ordinary tensors, and calls mixing both, stay right. In place:
//   all_reduce      rank r reduces its ring slice from every rank's input, in rank order, a
//                   piece at a time into a scratch that stays in cache, and writes the piece into
//                   every rank's output (AVG divided first): each element reduced once, the same
//                   bits everywhere; in place works (slice r of every buffer is touched by rank r
//                   only, read before written).
//   all_gather      each rank copies every peer's input block into its own output.
//   reduce_scatter  each rank reduces its block from every rank's input, in rank order.
//   broadcast       each rank copies the root's input.
// Then every rank publishes that it is done and waits for the others (no rank may reuse or free
// a buffer a peer still reads or writes): three synchronisations per call in place (where, whether
// every rank could map its peers', done), one before the arena form otherwise. Cost per rank (all_reduce
// of B bytes, n ranks): B read and B written, against the arena's copy in, reduction and copy out.
#include <cstring>
#include <vector>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/in_place.h"
#include "algorithms/patterns/ring.h"

namespace smddp::algo::arena {
namespace {

Pool& requirePool(Exec& exec) {
  Pool* pool = context(exec).pool;
  if (pool == nullptr) throwNoArena(exec);
  return *pool;
}

}  // namespace

void allReducePooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  InPlace call(exec, {pool.locate(args.send, bytes), pool.locate(args.recv, bytes)});
  if (!call.agree(every(call.refs(), &Refs::send) && every(call.refs(), &Refs::recv), args, true)) {
    allReduceSplit(exec, args);
    return;
  }
  const Views& v = call.views();
  const patterns::Range slice = patterns::ringChunk(args.count, exec.size(), exec.rank());
  reduceInRankOrder(exec, args, v.in, slice.begin * args.elementSize(), nullptr, slice.count,
                    &v.out);
  call.finish();
}

void allGatherPooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  InPlace call(exec, {pool.locate(args.send, bytes), {}});
  if (!call.agree(every(call.refs(), &Refs::send), args, false)) {
    allGather(exec, args);
    return;
  }
  const Views& v = call.views();
  for (int i = 0; i < exec.size(); ++i) {
    const int q = (exec.rank() + i) % exec.size();  // peers in turn, not all on rank 0 at once
    auto* dst = static_cast<unsigned char*>(args.block(static_cast<size_t>(q)));
    if (dst != v.in[q]) std::memcpy(dst, v.in[q], bytes);
  }
  call.finish();
}

void reduceScatterPooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  InPlace call(exec, {pool.locate(args.send, bytes * static_cast<size_t>(exec.size())), {}});
  if (!call.agree(every(call.refs(), &Refs::send), args, false)) {
    reduceScatter(exec, args);
    return;
  }
  // Through a cached accumulator, then into the output: in place (the output is block r of the
  // own input), each piece of block r is read before it is written; no peer reads block r.
  reduceInRankOrder(exec, args, call.views().in, static_cast<size_t>(exec.rank()) * bytes,
                    static_cast<unsigned char*>(args.recv), args.count);
  call.finish();
}

void broadcastPooled(Exec& exec, const CollectiveArgs& args) {
  requirePool(exec);
  if (!broadcastInPlace(exec, args.root, args)) broadcast(exec, args);
}

}  // namespace smddp::algo::arena
