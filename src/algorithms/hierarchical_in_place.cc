// SPDX-License-Identifier: Apache-2.0
// The arena phases of the hierarchical all_gather, reduce_scatter and broadcast
// (hierarchical_all_gather.cc, hierarchical_reduce_scatter.cc, hierarchical_broadcast.cc),
// hier_split's last phase and the whole hier_leader all_reduce (hierarchical_all_reduce.cc), on
// tensors in the ranks' shareable memory (arena/in_place.h: torch's allocate_tensor,
// Communicator::allocateShared): the host's ranks read each other's buffers directly instead of
// copying through the arena's slots. From kInPlaceMinBytes (the call's largest buffer) each first
// agrees with the host's ranks (one slot use, two when every buffer is shareable) and returns
// false, having moved nothing, when some buffer it would read in a peer is not shareable: the
// caller runs its arena phase. Each host decides alone; the network phases are the same either
// way. Every rank waits for the host's others before it returns (InPlace::finish), so no peer
// still reads a buffer its owner reuses.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/arena/in_place.h"
#include "algorithms/hierarchical.h"
#include "reduce/reducer.h"

namespace smddp::algo::hier {
namespace {

using arena::InPlace;
using arena::Refs;

// The pool to locate the call's buffers in, or null when the call is too small to ask or the
// host has no other rank to share with (a host of one rank, on hosts of different sizes).
arena::Pool* poolFor(const Exec& local, size_t largest) {
  return largest >= kInPlaceMinBytes && local.size() > 1 ? arena::poolOf(local) : nullptr;
}

}  // namespace

void copyFromOwners(Exec& local, const std::vector<unsigned char*>& outs, size_t count, size_t es,
                    unsigned char* out) {
  for (int i = 1; i < local.size(); ++i) {
    const int q = (local.rank() + i) % local.size();  // owners in turn, not all on one at once
    const patterns::Range block = patterns::ringChunk(count, local.size(), q);
    std::memcpy(out + block.begin * es, outs[static_cast<size_t>(q)] + block.begin * es,
                block.count * es);
  }
}

bool allGatherHostInPlace(Exec& local, const HostGroups& groups, const CollectiveArgs& args) {
  const size_t bytes = args.bytes();
  const size_t total = bytes * groups.layout.hostOf.size();
  arena::Pool* pool = poolFor(local, total);
  if (pool == nullptr) return false;
  // Called after this rank's network phase: once every rank has published, the blocks each
  // received are in its output. One output buffer per rank (a list of tensors: the arena).
  InPlace call(local,
               Refs{{}, args.blocks.empty() ? pool->locate(args.recv, total) : arena::PoolRef{}});
  if (!call.agree(arena::every(call.refs(), &Refs::recv), args, true)) return false;
  const std::vector<unsigned char*>& outs = call.views().out;
  auto* out = static_cast<unsigned char*>(args.recv);
  for (int i = 1; i < local.size(); ++i) {
    const int q = (local.rank() + i) % local.size();
    for (const std::vector<int>& host : groups.layout.ranksOf) {
      const size_t at = static_cast<size_t>(host[static_cast<size_t>(q)]) * bytes;
      std::memcpy(out + at, outs[static_cast<size_t>(q)] + at, bytes);
    }
  }
  call.finish();
  return true;
}

bool hostReduceScatterInPlace(Exec& local, const HostGroups& groups, const CollectiveArgs& sum,
                              unsigned char* partials) {
  const size_t bytes = sum.bytes();
  const size_t total = bytes * groups.layout.hostOf.size();
  arena::Pool* pool = poolFor(local, total);
  if (pool == nullptr) return false;
  InPlace call(local, Refs{pool->locate(sum.send, total), {}});
  if (!call.agree(arena::every(call.refs(), &Refs::send), sum, false)) return false;
  const int index = local.rank();
  for (size_t h = 0; h < groups.layout.ranksOf.size(); ++h) {
    const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][static_cast<size_t>(index)]);
    arena::reduceInRankOrder(local, sum, call.views().in, owner * bytes, partials + h * bytes,
                             sum.count);
  }
  call.finish();
  return true;
}

bool hostBroadcastInPlace(Exec& local, int source, const CollectiveArgs& args) {
  return poolFor(local, args.bytes()) != nullptr && arena::broadcastInPlace(local, source, args);
}

bool hostAllGatherInPlace(Exec& local, const CollectiveArgs& args) {
  arena::Pool* pool = poolFor(local, args.bytes());
  if (pool == nullptr) return false;
  // Called once this rank's block is final: the agreement's first slot use tells the others.
  InPlace call(local, Refs{{}, pool->locate(args.recv, args.bytes())});
  if (!call.agree(arena::every(call.refs(), &Refs::recv), args, true)) return false;
  copyFromOwners(local, call.views().out, args.count, args.elementSize(),
                 static_cast<unsigned char*>(args.recv));
  call.finish();
  return true;
}

bool allReduceLeaderInPlace(Exec& exec, Exec& local, const HostGroups& groups,
                            const CollectiveArgs& args) {
  arena::Pool* pool = poolFor(local, args.bytes());
  if (pool == nullptr) return false;
  InPlace call(local, Refs{pool->locate(args.send, args.bytes()),
                           pool->locate(args.recv, args.bytes())});
  // The leader reads every input; the others read the leader's output.
  const bool candidate = arena::every(call.refs(), &Refs::send) && call.refs()[0].recv.inPool();
  if (!call.agree(candidate, args, true)) return false;
  const CollectiveArgs sum = summed(args);
  const size_t es = args.elementSize();
  const size_t chunk = arena::SlotStep::chunkBytes(local, es);
  auto* out = static_cast<unsigned char*>(args.recv);
  const unsigned char* result = call.views().out[0];
  uint64_t msg = 0;  // only the leaders send, in their cross group
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    const size_t count = bytes / es;
    // One use per chunk: the leader publishes it once the chunk is final in its output. Its
    // acquire() waits until the others published the previous use, so it runs at most one
    // chunk ahead of their copies, which overlap its next reduction and network step.
    arena::SlotStep step(local);
    step.acquire();
    if (local.rank() == 0) {
      // Chunk k of every input is read here before the leader publishes k; the others write
      // their chunk k (in place: their input) only after that.
      arena::reduceInRankOrder(local, sum, call.views().in, off, out + off, count);
      msg = crossAllReduce(exec, groups, sum, out + off, count, msg);
      if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, out + off, count, exec.size());
      step.publish(1);
    } else {
      step.publish(1);
      step.await(0, 1);
      std::memcpy(out + off, result + off, bytes);
    }
    step.release();
  }
  call.finish();
  return true;
}

}  // namespace smddp::algo::hier
