// SPDX-License-Identifier: Apache-2.0
// Hierarchical all_reduce for a communicator over several hosts with the same number L >= 2 of
// ranks each and a shared-memory arena per host (hierarchical.h). The host's ranks reduce
// through their arena (arena/slot_step.h has its protocol), the network carries only what the
// host could not reduce itself, and every rank of a host drives its own part of it, so all of a
// host's network paths work at once. Two algorithms:
//
// hier_split (large messages), over the whole buffer cut into L blocks (block r: local index r):
//   1. arena reduce-scatter: block r of the host's L inputs reduced into block r of the output
//      (per arena use a piece of every block; hostReduceScatter).
//   2. network: all_reduce of block r with the ranks of local index r on the other hosts (the
//      cross group, H ranks: ring above crossRingMinBytes(H) (registry.h), segmented and
//      pipelined; recursive doubling below), in place in the output. AVG divides by n here.
//   3. arena all-gather: every block to every rank of the host (hier::hostAllGather).
//   From kInPlaceMinBytes, when every buffer of the host's ranks is in their shareable memory
//   (arena/in_place.h: torch's allocate_tensor, Communicator::allocateShared), phases 1 and 3
//   read the peers' buffers directly (block r reduced from the L inputs into the own output;
//   each other block copied from its owner's output): no copy through the arena. Each host
//   decides for itself; the network phase is the same either way.
//   The network phase is one pipelined transfer of bytes / L per rank, not one exchange per arena
//   chunk, so a handshake's round trip is paid a few times per collective, not per chunk. Cost per
//   rank: copy in (bytes), (L-1)/L x bytes reduced, a cross all_reduce of bytes / L, copy in
//   bytes / L and out bytes: each host sends and receives 2 (H-1)/H x bytes in all (ring),
//   against the flat ring's 2 (n-1)/n x bytes per rank = L x that per host. With H = 2 a host's
//   link carries `bytes` each way, so busbw (2 (n-1)/n x bytes / time) can reach 2 (n-1)/n of
//   the link rate: 1.5x with 2 hosts x 2 ranks, where the flat ring reaches 1.0x.
// hier_direct (small messages; the chunk is one arena slot):
//   1. arena: copy the chunk into the own slot; publish; reduce all L slots in local rank order
//      into the output (every rank of a host computes the same bits).
//   2. network: every rank all_reduces the whole chunk with its cross group (recursive doubling),
//      in place in the output: L identical exchanges per host pair in parallel, and no third
//      phase. AVG divides by n.
//   Latency: one arena synchronisation + ceil(log2 H) network exchanges.
//
// hier_leader (small messages, few network messages; on hosts of different sizes every size;
// the chunk is one arena slot):
//   1. arena: every other rank copies the chunk into its slot and publishes; the host's leader
//      (local index 0) reduces its input and the L-1 slots in local rank order into its output;
//   2. network: the leaders all_reduce the chunk with each other (recursive doubling; a ring
//      above crossRingMinBytes);
//   3. arena: the leader copies the result into its slot and publishes it; the others copy it out.
//   The others run one use ahead: they copy chunk k+1 in before they wait for chunk k's result,
//   so their copies overlap the leader's network step (they publish a use before they release
//   the previous one, so the leader acquires its slot by their releases, not by what they
//   published, and waits for their last release before it leaves).
//   Latency: two arena synchronisations + ceil(log2 H) network exchanges, with one message per
//   host and step where hier_direct sends L: each host's link carries B once per step, not L x B.
//   The same bits as hier_direct (same reduction order).
//   From kInPlaceMinBytes, when every input of the host's ranks and the leader's output are in
//   their shareable memory, the leader reduces straight from the inputs and the others copy each
//   chunk from its output (hier::allReduceLeaderInPlace): no copy through the arena.
// Reduction order: the local ranks in a fixed order, then the hosts in the cross algorithm's
// order, the same on every rank, so every rank ends with the same bits (exactly the flat
// algorithms' result where the op is exact: integers, min/max, small integer-valued floats).
// hier_direct's successive cross all_reduces take disjoint ranges of message indices (each as
// many as its algorithm may use), so chunks cannot match each other's messages.
#include <algorithm>
#include <cstring>
#include <optional>

#include "algorithms/algorithms.h"
#include "algorithms/arena/in_place.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/patterns/recursive_doubling.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/registry.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

using hier::pieceOf;
using hier::requireHosts;
using hier::summed;

// Phase 1 of hier_split: out's block r (r = local index; the L blocks of patterns::ringChunk)
// = the host's ranks' inputs' block r reduced in local rank order (sum.op: no division). Per
// arena use every rank copies the same piece of each of the L blocks of its input into its slot
// (block q at q x piece), and reduces piece `at` of its own block from all L slots into out. In
// place works: a use copies its pieces in before it writes the output, and later uses read
// later pieces.
void hostReduceScatter(Exec& local, const CollectiveArgs& sum, unsigned char* out) {
  const int ranksHere = local.size();
  const int me = local.rank();
  const size_t es = sum.elementSize();
  const size_t piece = arena::piecePerRank(local, es) / es;
  const auto* in = static_cast<const unsigned char*>(sum.send);
  const patterns::Range mine = patterns::ringChunk(sum.count, ranksHere, me);
  const size_t longest = patterns::ringChunk(sum.count, ranksHere, 0).count;
  for (size_t at = 0; at < longest; at += piece) {
    arena::SlotStep step(local);
    step.acquire();
    for (int q = 0; q < ranksHere; ++q) {
      const patterns::Range block = patterns::ringChunk(sum.count, ranksHere, q);
      std::memcpy(step.mine() + static_cast<size_t>(q) * piece * es, in + (block.begin + at) * es,
                  pieceOf(block, at, piece) * es);
    }
    step.publish(1);
    step.awaitAll(1);
    const size_t n = pieceOf(mine, at, piece);
    if (n > 0) {
      arena::reduceSlots(step, sum, ranksHere, out + (mine.begin + at) * es,
                         static_cast<size_t>(me) * piece * es, n);
    }
    step.release();
  }
}

}  // namespace

uint64_t hier::crossAllReduce(Exec& exec, const HostGroups& groups, const CollectiveArgs& sum,
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
  if (part.bytes() > crossRingMinBytes(cross.size())) {
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
    msg = hier::crossAllReduce(exec, groups, sum, out + off, count, msg);
    if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, out + off, count, exec.size());
  }
}

void allReduceHierLeader(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);  // no messages
  const CollectiveArgs sum = summed(args);
  const bool leader = local.rank() == 0;
  const int ranksHere = local.size();
  const size_t es = args.elementSize();
  const size_t chunk = arena::SlotStep::chunkBytes(local, es);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  const size_t total = args.bytes();
  if (total == 0) return;
  if (hier::allReduceLeaderInPlace(exec, local, groups, args)) return;
  const auto bytesAt = [&](size_t off) { return std::min(chunk, total - off); };
  if (!leader) {
    // One use ahead: chunk k+1 goes into the arena before chunk k's result comes back, so the
    // copy-in runs while the leader's network step of chunk k waits on the link. Chunk k's use
    // lives in uses[k % 2].
    std::optional<arena::SlotStep> uses[2];
    const auto fill = [&](size_t off, std::optional<arena::SlotStep>& use) {
      arena::SlotStep& step = use.emplace(local);
      step.acquire();
      std::memcpy(step.mine(), in + off, bytesAt(off));
      step.publish(1);
    };
    fill(0, uses[0]);
    size_t k = 0;
    for (size_t off = 0; off < total; off += chunk, ++k) {
      if (off + chunk < total) fill(off + chunk, uses[(k + 1) % 2]);
      arena::SlotStep& step = *uses[k % 2];
      step.await(0, 1);
      step.await(0, 2);
      std::memcpy(out + off, step.slotOf(0), bytesAt(off));
      step.release();
      uses[k % 2].reset();
    }
    return;
  }
  uint64_t msg = 0;  // only the leaders send, all in their cross group (local index 0)
  std::optional<uint64_t> lastUse;
  for (size_t off = 0; off < total; off += chunk) {
    const size_t bytes = bytesAt(off);
    const size_t count = bytes / es;
    arena::SlotStep step(local);
    // The others publish a use before they release the previous one, whose slot of ours they may
    // still be reading: wait for their releases themselves.
    step.acquireStrict();
    step.publish(1);  // identity only: the others read no data of ours in phase 1
    step.awaitAll(1);
    // Local rank order, as arena::reduceSlots, with this rank's input read in place.
    if (ranksHere == 1) {
      std::memmove(out + off, in + off, bytes);
    } else {
      reduce::reduce(sum.dtype, sum.op, out + off, in + off, step.slotOf(1), count);
      for (int r = 2; r < ranksHere; ++r) {
        reduce::reduce(sum.dtype, sum.op, out + off, out + off, step.slotOf(r), count);
      }
    }
    msg = hier::crossAllReduce(exec, groups, sum, out + off, count, msg);
    if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, out + off, count, exec.size());
    std::memcpy(step.mine(), out + off, bytes);
    step.publish(2);
    step.release();
    lastUse = step.use();
  }
  // The next collective's acquire() trusts `posted` again only once the others released the
  // last-but-one use, whose slot of ours they may be reading now.
  if (lastUse && *lastUse > 0) {
    arena::SlotStep::awaitReleased(local, *lastUse - 1);
  }
}

void allReduceHierSplit(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);  // no messages
  const CollectiveArgs sum = summed(args);
  const size_t es = args.elementSize();
  auto* out = static_cast<unsigned char*>(args.recv);
  const patterns::Range mine = patterns::ringChunk(args.count, local.size(), local.rank());
  const auto network = [&] {
    hier::crossAllReduce(exec, groups, sum, out + mine.begin * es, mine.count, 0);
    if (args.op == ReduceOp::kAvg && mine.count > 0) {
      reduce::finishAverage(args.dtype, out + mine.begin * es, mine.count, exec.size());
    }
  };
  std::optional<arena::InPlace> call;
  if (arena::poolOf(local) != nullptr && args.bytes() >= kInPlaceMinBytes) {
    arena::Pool& pool = *arena::poolOf(local);
    call.emplace(local, arena::Refs{pool.locate(args.send, args.bytes()),
                                    pool.locate(args.recv, args.bytes())});
    const bool candidate = arena::every(call->refs(), &arena::Refs::send) &&
                           arena::every(call->refs(), &arena::Refs::recv);
    if (!call->agree(candidate, args, true)) call.reset();
  }
  if (!call) {  // through the arena
    hostReduceScatter(local, sum, out);
    network();
    hier::hostAllGather(local, args.count, es, out);
    return;
  }
  // In place on the host's tensors: block r reduced straight from the host's inputs (block r of
  // every buffer is written by local rank r only, and read by it before written), the network
  // step, then every rank copies each other block from its owner's output once the owner is done.
  const arena::Views& v = call->views();
  arena::reduceInRankOrder(local, sum, v.in, mine.begin * es, out + mine.begin * es, mine.count);
  network();
  call->allReached();
  hier::copyFromOwners(local, v.out, args.count, es, out);
  call->finish();
}

}  // namespace smddp::algo
