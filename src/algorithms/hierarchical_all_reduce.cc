// SPDX-License-Identifier: Apache-2.0
// Hierarchical all_reduce for a communicator over several hosts with the same number L >= 2 of
// ranks each and a shared-memory arena per host (exec.h: HostGroups). The host's ranks reduce
// through their arena (arena/slot_step.h has its protocol), the network carries only what the
// host could not reduce itself, and every rank of a host drives its own part of it, so all of a
// host's network paths work at once. Per chunk of the buffer (one arena use):
//
// hier_split (large messages; the chunk is half an arena slot, capped by the segment size):
//   1. arena: copy the chunk, except slice r (r = local index), into the own slot; publish; reduce
//      slice r of the own input with slice r of every local peer's slot into the own slot.
//   2. network: all_reduce of slice r with the ranks of local index r on the other hosts (the
//      cross group, H ranks: ring above kCrossRingBytes, recursive doubling below), in place in
//      the slot. AVG divides by n here.
//   3. arena: publish phase 2; copy every slice from its owner's slot into the output; release.
//   Cost per rank: the arena_split copies and 1/L of its reductions, plus a cross all_reduce of
//   bytes / L: each host sends and receives 2 (H-1)/H x bytes in all (ring), against the flat
//   ring's 2 (n-1)/n x bytes per rank = L x that per host. With H = 2 a host's link carries
//   `bytes` each way, so busbw (2 (n-1)/n x bytes / time) can reach 2 (n-1)/n of the link rate:
//   1.5x with 2 hosts x 2 ranks, where the flat ring reaches 1.0x.
// hier_direct (small messages; the chunk is one arena slot):
//   1. arena: copy the chunk into the own slot; publish; reduce all L slots in local rank order
//      into the output (every rank of a host computes the same bits).
//   2. network: every rank all_reduces the whole chunk with its cross group (recursive doubling),
//      in place in the output: L identical exchanges per host pair in parallel, and no third
//      phase. AVG divides by n.
//   Latency: one arena synchronisation + ceil(log2 H) network exchanges.
//
// Reduction order: the local ranks in a fixed order, then the hosts in the cross algorithm's
// order, the same on every rank, so every rank ends with the same bits (exactly the flat
// algorithms' result where the op is exact: integers, min/max, small integer-valued floats).
// Successive cross all_reduces take disjoint ranges of message indices (each as many as its
// algorithm may use), so chunks cannot match each other's messages.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/patterns/recursive_doubling.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

// Cross all_reduces of slices up to this size use recursive doubling (latency), ring above.
constexpr size_t kCrossRingBytes = 64 * 1024;

const HostGroups& requireHosts(const Exec& exec) {
  if (exec.hosts() == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "smddp: rank " + std::to_string(exec.rank()) + ": " + exec.desc().describe() +
                    ": a hierarchical algorithm needs ranks on several hosts, the same number "
                    "(>= 2) on each, and the shared-memory arena on every host");
  }
  return *exec.hosts();
}

// AVG is summed everywhere and divided once, by all n ranks, at the end.
CollectiveArgs summed(const CollectiveArgs& args) {
  CollectiveArgs sum = args;
  if (sum.op == ReduceOp::kAvg) sum.op = ReduceOp::kSum;
  return sum;
}

// all_reduce of `count` elements at `buffer`, in place, with this rank's cross group; message
// indices from msgBase on. Returns the next free message index.
uint64_t crossAllReduce(Exec& exec, const HostGroups& groups, const CollectiveArgs& sum,
                        void* buffer, size_t count, uint64_t msgBase) {
  if (count == 0) return msgBase;  // the whole cross group has the same slice size
  Exec cross(exec, groups.cross, groups.crossSettings, msgBase);
  CollectiveArgs part = sum;
  part.send = buffer;
  part.recv = buffer;
  part.count = count;
  // The next base must be the same on every rank of the cross group, so it is what the algorithm
  // may use, not what this rank used (a rank outside recursive doubling's fold uses fewer).
  uint64_t reserved = 0;
  if (part.bytes() > kCrossRingBytes) {
    const RingGeometry geo =
        ringGeometry(cross, BlockLayout::split(buffer, count, cross.size(), part.elementSize()));
    reserved = 2 * patterns::ringPassMessages(cross.size(), geo.segsPerBlock);
    allReduceRing(cross, part);
  } else {
    reserved = static_cast<uint64_t>(patterns::rdSteps(cross.size())) + 2;
    allReduceRecursiveDoubling(cross, part);
  }
  cross.waitAll();
  return msgBase + reserved;
}

}  // namespace

void allReduceHierDirect(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);  // no messages
  const CollectiveArgs sum = summed(args);
  const int ranksHere = local.size();
  const size_t es = args.elementSize();
  const size_t chunk = arena::SlotStep::chunkBytes(local, es);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  uint64_t msg = 0;
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    const size_t count = bytes / es;
    {
      arena::SlotStep step(local);
      step.acquire();
      std::memcpy(step.mine(), in + off, bytes);
      step.publish(1);
      step.awaitAll(1);
      arena::reduceSlots(step, sum, ranksHere, out + off, 0, count);
      step.release();
    }
    msg = crossAllReduce(exec, groups, sum, out + off, count, msg);
    if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, out + off, count, exec.size());
  }
}

void allReduceHierSplit(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);  // no messages
  const CollectiveArgs sum = summed(args);
  const int ranksHere = local.size();
  const int me = local.rank();
  const size_t es = args.elementSize();
  const size_t chunk = arena::SlotStep::chunkBytes(local, es, 2);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  uint64_t msg = 0;
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t count = std::min(chunk, args.bytes() - off) / es;
    const patterns::Range slice = patterns::ringChunk(count, ranksHere, me);  // ours
    const size_t first = slice.begin;
    const size_t mineCount = slice.count;
    arena::SlotStep step(local);
    step.acquire();
    std::memcpy(step.mine(), in + off, first * es);
    std::memcpy(step.mine() + slice.end() * es, in + off + slice.end() * es,
                (count - slice.end()) * es);
    step.publish(1);
    step.awaitAll(1);
    unsigned char* acc = step.mine() + first * es;
    const unsigned char* partial = in + off + first * es;
    for (int i = 1; i < ranksHere && mineCount > 0; ++i) {
      const int q = (me + i) % ranksHere;
      reduce::reduce(args.dtype, sum.op, acc, partial, step.slotOf(q) + first * es, mineCount);
      partial = acc;
    }
    msg = crossAllReduce(exec, groups, sum, acc, mineCount, msg);
    if (args.op == ReduceOp::kAvg && mineCount > 0) {
      reduce::finishAverage(args.dtype, acc, mineCount, exec.size());
    }
    step.publish(2);
    arena::copySlicesOut(step, ranksHere, me, count, es, out + off);
    step.release();
  }
}

}  // namespace smddp::algo
