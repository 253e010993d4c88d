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
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/pool.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/patterns/ring.h"
#include "common/logging.h"
#include "reduce/reducer.h"

namespace smddp::algo::arena {
namespace {

constexpr size_t kPieceBytes = 32 * 1024;  // an all_reduce's accumulator: stays in L1/L2

struct Refs {
  PoolRef send;
  PoolRef recv;
};

// The buffers of every rank as this process sees them (its own as given).
struct Views {
  std::vector<const unsigned char*> in;
  std::vector<unsigned char*> out;
};

// The decision of one call, the same on every rank. In one slot use every rank publishes where
// its buffers lie (phase 1); when every buffer the form touches in a peer is shared memory (a
// candidate), every rank maps its peers' buffers and publishes whether it could (phase 2: a peer
// in another pid namespace cannot be opened): in place only when every rank could, else every
// rank takes the arena form.
class InPlace {
 public:
  InPlace(Exec& exec, const Refs& mine) : exec_(exec), step_(exec) {
    step_.acquire();
    std::memcpy(step_.mine(), &mine, sizeof(Refs));
    step_.publish(1);
    step_.awaitAll(1);
    for (int r = 0; r < exec.size(); ++r) {
      Refs refs;
      std::memcpy(&refs, r == exec.rank() ? step_.mine() : step_.slotOf(r), sizeof(Refs));
      all_.push_back(refs);
    }
  }
  const std::vector<Refs>& refs() const { return all_; }
  const Views& views() const { return views_; }

  // `candidate`: computed from refs() alone (so alike on every rank); `outs`: the form writes the
  // peers' outputs. Releases the slot use.
  bool agree(bool candidate, const CollectiveArgs& args, bool outs) {
    if (!candidate) {
      step_.release();
      return false;
    }
    uint32_t mapped = 1;
    try {
      views_ = viewsOf(args, outs);
    } catch (const Error& e) {
      mapped = 0;
      static std::atomic<bool> said{false};
      if (!said.exchange(true)) {
        SMDDP_WARN(exec_.rank(), "tensors in shareable memory go through the arena: " << e.what());
      }
    }
    std::memcpy(step_.mine() + sizeof(Refs), &mapped, sizeof(mapped));
    step_.publish(2);
    step_.awaitAll(2);
    bool all = true;
    for (int r = 0; r < exec_.size(); ++r) {
      uint32_t theirs = 0;
      std::memcpy(&theirs, (r == exec_.rank() ? step_.mine() : step_.slotOf(r)) + sizeof(Refs),
                  sizeof(theirs));
      all = all && theirs == 1;
    }
    step_.release();
    if (all) exec_.pool()->countInPlace();
    return all;
  }

  // Every rank is done with every other's buffers before any returns (a slot use of its own).
  void finish() {
    SlotStep done(exec_);
    done.acquire();
    done.publish(1);
    done.awaitAll(1);
    done.release();
  }

 private:
  Views viewsOf(const CollectiveArgs& args, bool outs) {
    Pool& pool = *exec_.pool();
    Views v;
    for (int r = 0; r < exec_.size(); ++r) {
      const Refs& refs = all_[static_cast<size_t>(r)];
      const bool me = r == exec_.rank();
      v.in.push_back(me ? static_cast<const unsigned char*>(args.send)
                        : refs.send.inPool() ? pool.map(refs.send) : nullptr);
      v.out.push_back(me ? static_cast<unsigned char*>(args.recv)
                         : outs && refs.recv.inPool() ? pool.map(refs.recv) : nullptr);
    }
    return v;
  }

  Exec& exec_;
  SlotStep step_;
  std::vector<Refs> all_;
  Views views_;
};

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
  Pool& pool = requirePool(exec);
  const size_t bytes = args.bytes();
  const bool root = exec.rank() == args.root;
  InPlace call(exec, {root ? pool.locate(args.send, bytes) : PoolRef{}, {}});
  if (!call.agree(call.refs()[static_cast<size_t>(args.root)].send.inPool(), args, false)) {
    broadcast(exec, args);
    return;
  }
  const unsigned char* from = call.views().in[static_cast<size_t>(args.root)];
  if (args.recv != from) std::memcpy(args.recv, from, bytes);
  call.finish();
}

}  // namespace smddp::algo::arena
