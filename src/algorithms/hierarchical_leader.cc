// SPDX-License-Identifier: Apache-2.0
// broadcast, all_gather and reduce_scatter for small messages across H hosts of L ranks
// (hierarchical.h): one rank per host (the leader) carries the host's whole part over the network,
// so each step puts one message per host on the wire instead of L (on a host whose network stack
// shares the ranks' cores, each message costs them CPU time), and the host's ranks meet in their
// arena.
//
// Hosts may hold different numbers of ranks (L_h on host h): blocks are packed host-major (host
// h's at the sum of the L of the hosts before it), and the leaders' rings carry blocks of L_h.
//
// broadcast (hier_leader), root (r, j): the carriers (hier::carriers: the root, and on the other
//   hosts the rank of local index j, or the leader where the hosts differ) broadcast the whole
//   buffer from the root to each other (the flat algorithm for H ranks); then on every host the
//   carrier copies it into its slot per use and the others copy it out (from kInPlaceMinBytes,
//   when the carrier's output is in shareable memory, straight from there). Latency: the network
//   broadcast among H plus one arena synchronisation.
// all_gather (hier_leader), leader (h, 0):
//   1. arena: every rank copies its block into its slot; the leader gathers the host's L blocks
//      into scratch, host-major (host h's at h L blocks);
//   2. network: the leaders all_gather their hosts' L blocks (the flat algorithm for H ranks;
//      where the hosts differ, the ring with blocks of L_h);
//   3. arena: the leader copies the n blocks into its slot per use, the others copy them out to
//      their places; the leader unpacks from scratch.
//   Latency: the network all_gather among H plus two arena synchronisations.
// reduce_scatter (hier_leader), leader (h, 0):
//   1. arena: per use every rank copies a piece of each of its n input blocks into its slot (the
//      block of (h, q) at piece h L + q: host-major); the leader reduces, in local rank order, the
//      L slots into n partial blocks in scratch;
//   2. network: the leaders reduce-scatter their partials (ring over H with blocks of L_h; leader
//      h ends with its host's L blocks reduced over every host);
//   3. arena: the leader hands rank (h, q) block q (hier::hostScatter). AVG divides by n there.
//   The same reduction order as hier's (local ranks, then the hosts in ring order).
// Identity: each use's readers check whom they read (the leader reads everyone in step 1 of
// all_gather; the broadcast's uses are symmetric), so ranks in different collectives fail with
// kMismatch.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

// Packed offset [off, off + bytes) of the host-major blocks to the output blocks: block k of the
// packed order is the block of rank order[k] (HostGroups::hostMajor).
void unpack(const CollectiveArgs& args, const std::vector<int>& order, const unsigned char* from,
            size_t off, size_t bytes) {
  const size_t block = args.bytes();
  for (size_t at = off; at < off + bytes;) {
    const size_t k = at / block;
    const size_t within = at % block;
    const size_t n = std::min(block - within, off + bytes - at);
    std::memcpy(static_cast<unsigned char*>(args.block(static_cast<size_t>(order[k]))) + within,
                from + (at - off), n);
    at += n;
  }
}

// The leaders' blocks in a host-major buffer of `elems` elements per rank: host h's L_h blocks
// from `base`, as a ring layout with one (differently sized) block per host. Without a base (the
// ranks that are not leaders) only the sizes, for the ring's geometry.
struct HostBlocks {
  std::vector<void*> starts;
  std::vector<size_t> sizes;
  BlockLayout layout;

  HostBlocks(const std::vector<size_t>& firsts, unsigned char* base, size_t elems, size_t es) {
    for (size_t h = 0; h + 1 < firsts.size(); ++h) {
      starts.push_back(base != nullptr ? base + firsts[h] * elems * es : nullptr);
      sizes.push_back((firsts[h + 1] - firsts[h]) * elems);
    }
    layout = BlockLayout::varied(starts.data(), sizes.data(), static_cast<int>(sizes.size()), es);
  }
};

}  // namespace

void broadcastHierLeader(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = groups.layout.hosts();
  const int rootHost = hier::hostOf(exec, groups, args.root);
  const std::vector<int> carriers = hier::carriers(groups.layout, args.root);
  const int myHost = groups.layout.hostOf[static_cast<size_t>(exec.rank())];
  const int source = groups.layout.localIndex(carriers[static_cast<size_t>(myHost)]);
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (local.rank() == source) {  // one carrier per host
    Exec cross(exec, carriers, groups.crossSettings, 0);
    CollectiveArgs part = args;
    part.root = rootHost;
    hier::crossAlgorithm(CollectiveKind::kBroadcast, args.bytes(), hosts).run(cross, part);
    cross.waitAll();
  }
  // The root copied send into recv in the network step: every carrier's data is in its output.
  // From kInPlaceMinBytes a host whose carrier's output is shareable copies it straight from
  // there (hierarchical_in_place.cc); a host of one rank has nothing to hand out.
  auto* out = static_cast<unsigned char*>(args.recv);
  CollectiveArgs carried = args;
  carried.send = args.recv;
  if (hier::hostBroadcastInPlace(local, source, carried)) return;
  hier::hostBroadcast(local, source, out, out, args.bytes(), args.elementSize());
}

void allGatherHierLeader(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const patterns::HostLayout& layout = groups.layout;
  const int hosts = layout.hosts();
  const auto myHost = static_cast<size_t>(layout.hostOf[static_cast<size_t>(exec.rank())]);
  const std::vector<int>& order = groups.hostMajor;
  const std::vector<size_t>& firsts = groups.hostFirsts;
  Exec local(exec, groups.local, groups.localSettings, 0);
  const bool leader = local.rank() == 0;
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  const size_t total = block * order.size();
  // Every rank checks the leaders' ring fits the tag layout, so all fail alike before a use.
  const bool even = layout.ranksPerHost() > 0;
  auto* packed = leader ? static_cast<unsigned char*>(exec.scratch(total, 2)) : nullptr;
  const HostBlocks blocks(firsts, packed, args.count, es);
  const RingGeometry geo = ringGeometry(exec, blocks.layout);
  if (!even) {
    requireTagRoom(exec, patterns::ringPassMessages(hosts, geo.segsPerBlock),
                   "hier_leader all_gather");
  }
  // The leader's: its host's blocks, then every host's (host-major).
  unsigned char* mine = leader ? packed + firsts[myHost] * block : nullptr;
  hier::hostGather(local, 0, static_cast<const unsigned char*>(args.send), block, es, mine);
  if (leader) {
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    if (even) {
      CollectiveArgs part = args;
      part.blocks.clear();
      part.send = mine;
      part.recv = packed;
      part.count = args.count * groups.local.size();
      hier::crossAlgorithm(CollectiveKind::kAllGather, part.bytes(), hosts).run(cross, part);
    } else {
      allGatherRingPass(cross, blocks.layout, geo, 0, mine, 0);
    }
    cross.waitAll();
  }
  const size_t chunk = arena::SlotStep::chunkBytes(local, es);
  for (size_t off = 0; off < total; off += chunk) {
    const size_t bytes = std::min(chunk, total - off);
    arena::SlotStep step(local);
    step.acquire();
    if (leader) std::memcpy(step.mine(), packed + off, bytes);
    step.publish(1);
    if (!leader) {
      step.await(0, 1);
      unpack(args, order, step.slotOf(0), off, bytes);
    }
    step.release();
  }
  if (leader) unpack(args, order, packed, 0, total);
}

void reduceScatterHierLeader(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const patterns::HostLayout& layout = groups.layout;
  const int hosts = layout.hosts();
  const std::vector<int>& order = groups.hostMajor;
  const std::vector<size_t>& firsts = groups.hostFirsts;
  const CollectiveArgs sum = hier::summed(args);
  Exec local(exec, groups.local, groups.localSettings, 0);
  const auto perHost = static_cast<size_t>(local.size());
  const bool leader = local.rank() == 0;
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  const size_t n = order.size();
  auto* partials = leader ? static_cast<unsigned char*>(exec.scratch(block * n, 2)) : nullptr;
  // Every rank checks the leaders' ring fits the tag layout, so all fail alike before a use.
  const HostBlocks blocks(firsts, partials, args.count, es);
  const RingGeometry geo = ringGeometry(exec, blocks.layout);
  requireTagRoom(exec, patterns::ringPassMessages(hosts, geo.segsPerBlock),
                 "hier_leader reduce_scatter");
  const auto* in = static_cast<const unsigned char*>(args.send);
  const patterns::Range whole{0, args.count};
  const size_t piece = arena::piecePer(local, es, n) / es;
  for (size_t at = 0; at < args.count; at += piece) {
    const size_t count = hier::pieceOf(whole, at, piece);
    arena::SlotStep step(local);
    step.acquire();
    for (size_t k = 0; k < n; ++k) {  // host-major: the block of order[k]
      const auto owner = static_cast<size_t>(order[k]);
      std::memcpy(step.mine() + k * piece * es, in + owner * block + at * es, count * es);
    }
    step.publish(1);
    if (leader) {
      step.awaitAll(1);
      for (size_t k = 0; k < n; ++k) {
        arena::reduceSlots(step, sum, local.size(), partials + k * block + at * es,
                           k * piece * es, count);
      }
    }
    step.release();
  }
  // The leader's result: its host's L blocks, reduced over every host.
  auto* mine = leader ? static_cast<unsigned char*>(exec.scratch(block * perHost, 1)) : nullptr;
  if (leader) {
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    reduceScatterRingPass(cross, sum, blocks.layout, blocks.layout, mine, geo, hosts - 1, 0);
    cross.waitAll();
  }
  hier::hostScatter(local, 0, mine, block, es, static_cast<unsigned char*>(args.recv));
  if (args.op == ReduceOp::kAvg) {
    reduce::finishAverage(args.dtype, args.recv, args.count, exec.size());
  }
}

}  // namespace smddp::algo
