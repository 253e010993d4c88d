// SPDX-License-Identifier: Apache-2.0
// reduce_scatter across H hosts with L ranks each (hierarchical.h). Rank (h, i) is the rank of
// local index i on host h (HostGroups::layout.ranksOf[h][i]); its cross group is
// (0, i) .. (H-1, i).
//
// reduce_scatter (hier), all_gather's hier in reverse (hierarchical_all_gather.cc): each host's
// link carries what the host as a whole must send, once, split over its L ranks' cross groups.
//   1. arena: per use every rank copies a piece of each of the n blocks of its input into its
//      slot (block of (h, q) at (q H + h) pieces); rank (., i) reduces, in local rank order, the
//      pieces of the blocks of (0, i) .. (H-1, i) from the L slots into H partial blocks;
//   2. network: ring reduce-scatter of the H partial blocks in the cross group, rank (h, i)
//      ending with block h (its own) reduced over every host. AVG divides by n there.
//   Each host sends and receives (H-1) L blocks: as much as the flat ring moves per rank.
//   From kInPlaceMinBytes, on tensors in the host's shareable memory, phase 1 reads the host's
//   peers' inputs directly (hierarchical_in_place.cc).
//   Latency: one arena synchronisation per host plus the ring's rounds among H ranks instead of n.
//
// reduce_scatter (hier_leader), small messages: one rank per host (the leader) carries the host's
// whole part over the network, so each step puts one message per host on the wire instead of L,
// and the host's ranks meet in their arena. Hosts may hold different numbers of ranks (L_h on
// host h): blocks are packed host-major (host h's at the sum of the L of the hosts before it),
// and the leaders' ring carries blocks of L_h. Leader (h, 0):
//   1. arena: per use every rank copies a piece of each of its n input blocks into its slot (the
//      block of (h, q) at piece h L + q: host-major); the leader reduces, in local rank order, the
//      L slots into n partial blocks in scratch;
//   2. network: the leaders reduce-scatter their partials (ring over H with blocks of L_h; leader
//      h ends with its host's L blocks reduced over every host);
//   3. arena: the leader hands rank (h, q) block q (hier::hostScatter). AVG divides by n there.
//   The same reduction order as hier's (local ranks, then the hosts in ring order).
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

using hier::HostBlocks;
using hier::pieceOf;

}  // namespace

void reduceScatterHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int index = groups.layout.localIndex(exec.rank());
  const CollectiveArgs sum = hier::summed(args);
  const size_t es = args.elementSize();
  const size_t blockBytes = args.bytes();
  auto* partials = static_cast<unsigned char*>(exec.scratch(blockBytes * hosts, 2));
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (!hier::hostReduceScatterInPlace(local, groups, sum, partials)) {
    const int ranksHere = local.size();
    const size_t piece =
        arena::piecePer(local, es, static_cast<size_t>(hosts) * static_cast<size_t>(ranksHere)) /
        es;
    const patterns::Range whole{0, args.count};
    const auto* in = static_cast<const unsigned char*>(args.send);
    for (size_t at = 0; at < args.count; at += piece) {
      const size_t count = pieceOf(whole, at, piece);
      arena::SlotStep step(local);
      step.acquire();
      for (int q = 0; q < ranksHere; ++q) {
        for (int h = 0; h < hosts; ++h) {
          const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][q]);
          std::memcpy(step.mine() + static_cast<size_t>(q * hosts + h) * piece * es,
                      in + owner * blockBytes + at * es, count * es);
        }
      }
      step.publish(1);
      step.awaitAll(1);
      for (int h = 0; h < hosts; ++h) {
        arena::reduceSlots(step, sum, ranksHere, partials + h * blockBytes + at * es,
                           static_cast<size_t>(index * hosts + h) * piece * es, count);
      }
      step.release();
    }
  }
  Exec cross(exec, groups.cross, groups.crossSettings, 0);
  const size_t total = args.count * static_cast<size_t>(hosts);
  const BlockLayout blocks = BlockLayout::split(partials, total, hosts, es);
  const RingGeometry geo = ringGeometry(cross, blocks);
  requireTagRoom(cross, patterns::ringPassMessages(hosts, geo.segsPerBlock),
                 "hier reduce_scatter");
  reduceScatterRingPass(cross, sum, blocks, blocks, args.recv, geo, hosts - 1, 0);
  cross.waitAll();
  if (args.op == ReduceOp::kAvg) {
    reduce::finishAverage(args.dtype, args.recv, args.count, exec.size());
  }
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
