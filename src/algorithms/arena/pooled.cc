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
// a buffer a peer still reads or writes): two synchronisations per call. Cost per rank (all_reduce
// of B bytes, n ranks): B read and B written, against the arena's copy in, reduction and copy out.
#include <cstring>
#include <vector>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/pool.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/patterns/ring.h"
#include "reduce/reducer.h"

namespace smddp::algo::arena {
namespace {

constexpr size_t kPieceBytes = 32 * 1024;  // an all_reduce's accumulator: stays in L1/L2

struct Refs {
  PoolRef send;
  PoolRef recv;
};

// One use of the slots: publishes this rank's refs, reads every rank's. The step is acquired and
// published (phase 1) on return.
std::vector<Refs> exchangeRefs(SlotStep& step, Exec& exec, const Refs& mine) {
  step.acquire();
  std::memcpy(step.mine(), &mine, sizeof(Refs));
  step.publish(1);
  step.awaitAll(1);
  std::vector<Refs> all(static_cast<size_t>(exec.size()));
  for (int r = 0; r < exec.size(); ++r) {
    std::memcpy(&all[static_cast<size_t>(r)], r == exec.rank() ? step.mine() : step.slotOf(r),
                sizeof(Refs));
  }
  return all;
}

// The buffers of every rank as this process sees them (its own as given).
struct Views {
  std::vector<const unsigned char*> in;
  std::vector<unsigned char*> out;
};

Views viewsOf(Exec& exec, const std::vector<Refs>& all, const CollectiveArgs& args, bool outs) {
  Pool& pool = *exec.pool();
  pool.countInPlace();
  Views v;
  for (int r = 0; r < exec.size(); ++r) {
    const Refs& refs = all[static_cast<size_t>(r)];
    const bool me = r == exec.rank();
    v.in.push_back(me ? static_cast<const unsigned char*>(args.send)
                      : refs.send.inPool() ? pool.map(refs.send) : nullptr);
    v.out.push_back(me ? static_cast<unsigned char*>(args.recv)
                       : outs && refs.recv.inPool() ? pool.map(refs.recv) : nullptr);
  }
  return v;
}

// Every rank is done with every other's buffers before any returns.
void finish(SlotStep& step) {
  step.publish(2);
  step.awaitAll(2);
  step.release();
}

bool every(const std::vector<Refs>& all, PoolRef Refs::*ref) {
  for (const Refs& r : all) {
    if (!(r.*ref).inPool()) return false;
  }
  return true;
}

// Elements [at, at + count) (byte offset `off` of every input) reduced over the ranks in rank
// order, a piece at a time into a scratch that stays in cache (AVG divided), each piece written
// to `out` (at the piece's offset from `out`), or to every output in `outs` at `off`.
void reduceInRankOrder(Exec& exec, const CollectiveArgs& args,
                       const std::vector<const unsigned char*>& in, size_t off, unsigned char* out,
                       size_t count, const std::vector<unsigned char*>* outs = nullptr) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const size_t piece = std::max<size_t>(1, kPieceBytes / es);
  auto* acc = static_cast<unsigned char*>(exec.scratch(piece * es));
  for (size_t done = 0; done < count; done += piece) {
    const size_t k = std::min(piece, count - done);
    const size_t at = off + done * es;
    reduce::reduce(args.dtype, args.op, acc, in[0] + at, in[1] + at, k);
    for (int q = 2; q < n; ++q) reduce::reduce(args.dtype, args.op, acc, acc, in[q] + at, k);
    if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, acc, k, n);
    if (outs == nullptr) {
      std::memcpy(out + done * es, acc, k * es);
    } else {
      for (unsigned char* o : *outs) std::memcpy(o + at, acc, k * es);
    }
  }
}

Pool& requirePool(Exec& exec) {
  if (exec.pool() == nullptr) throwNoArena(exec);
  return *exec.pool();
}

}  // namespace

void allReducePooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  SlotStep step(exec);
  const auto all =
      exchangeRefs(step, exec, {pool.locate(args.send, bytes), pool.locate(args.recv, bytes)});
  if (!every(all, &Refs::send) || !every(all, &Refs::recv)) {
    step.release();
    allReduceSplit(exec, args);
    return;
  }
  const Views v = viewsOf(exec, all, args, true);
  const int n = exec.size();
  const size_t es = args.elementSize();
  const patterns::Range slice = patterns::ringChunk(args.count, n, exec.rank());
  const size_t off = slice.begin * es;
  reduceInRankOrder(exec, args, v.in, off, nullptr, slice.count, &v.out);
  finish(step);
}

void allGatherPooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  SlotStep step(exec);
  const auto all = exchangeRefs(step, exec, {pool.locate(args.send, bytes), {}});
  if (!every(all, &Refs::send)) {
    step.release();
    allGather(exec, args);
    return;
  }
  const Views v = viewsOf(exec, all, args, false);
  for (int i = 0; i < exec.size(); ++i) {
    const int q = (exec.rank() + i) % exec.size();  // peers in turn, not all on rank 0 at once
    auto* dst = static_cast<unsigned char*>(args.block(static_cast<size_t>(q)));
    if (dst != v.in[q]) std::memcpy(dst, v.in[q], bytes);
  }
  finish(step);
}

void reduceScatterPooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const int n = exec.size();
  const size_t bytes = args.bytes();
  SlotStep step(exec);
  const auto all =
      exchangeRefs(step, exec, {pool.locate(args.send, bytes * static_cast<size_t>(n)), {}});
  if (!every(all, &Refs::send)) {
    step.release();
    reduceScatter(exec, args);
    return;
  }
  const Views v = viewsOf(exec, all, args, false);
  const size_t mine = static_cast<size_t>(exec.rank()) * bytes;
  auto* out = static_cast<unsigned char*>(args.recv);
  // Through a cached accumulator, then into the output: in place (the output is block r of the
  // own input), each piece of block r is read before it is written; no peer reads block r.
  reduceInRankOrder(exec, args, v.in, mine, out, args.count);
  finish(step);
}

void broadcastPooled(Exec& exec, const CollectiveArgs& args) {
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  SlotStep step(exec);
  const bool root = exec.rank() == args.root;
  const auto all = exchangeRefs(step, exec, {root ? pool.locate(args.send, bytes) : PoolRef{}, {}});
  if (!all[static_cast<size_t>(args.root)].send.inPool()) {
    step.release();
    broadcast(exec, args);
    return;
  }
  const Views v = viewsOf(exec, all, args, false);
  const unsigned char* from = v.in[static_cast<size_t>(args.root)];
  if (args.recv != from) std::memcpy(args.recv, from, bytes);
  finish(step);
}

}  // namespace smddp::algo::arena
