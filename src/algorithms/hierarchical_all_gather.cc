// SPDX-License-Identifier: Apache-2.0
// all_gather across H hosts with L ranks each (hierarchical.h). Rank (h, i) is the rank of local
// index i on host h (HostGroups::layout.ranksOf[h][i]); its cross group is (0, i) .. (H-1, i).
//
// all_gather (hier): each host's link carries what the host as a whole must receive, once, split
// over its L ranks' cross groups, and everything within a host goes through its arena. The
// network phase is the flat algorithm the selector picks for H ranks (bruck or ring).
//   1. network: rank (h, i) all_gathers its block with its cross group, straight into the output
//      blocks of (0, i) .. (H-1, i);
//   2. arena: every rank copies the H blocks it holds into its slot (a piece of each per use);
//      the host's other ranks copy them out to their places.
//   A host sends its L blocks to every other host once: (H-1) L blocks per host and direction,
//   the least an all_gather can move; no arithmetic, so the result equals the flat one.
//   From kInPlaceMinBytes, on tensors in the host's shareable memory, phase 2 reads the host's
//   peers' buffers directly (hierarchical_in_place.cc).
//   Latency: one arena synchronisation per host plus the network algorithm's rounds among H
//   ranks instead of n.
//
// all_gather (hier_leader), small messages: one rank per host (the leader) carries the host's
// whole part over the network, so each step puts one message per host on the wire instead of L
// (on a host whose network stack shares the ranks' cores, each message costs them CPU time), and
// the host's ranks meet in their arena. Hosts may hold different numbers of ranks (L_h on host
// h): blocks are packed host-major (host h's at the sum of the L of the hosts before it), and the
// leaders' rings carry blocks of L_h. Leader (h, 0):
//   1. arena: every rank copies its block into its slot; the leader gathers the host's L blocks
//      into scratch, host-major (host h's at h L blocks);
//   2. network: the leaders all_gather their hosts' L blocks (the flat algorithm for H ranks;
//      where the hosts differ, the ring with blocks of L_h);
//   3. arena: the leader copies the n blocks into its slot per use, the others copy them out to
//      their places; the leader unpacks from scratch.
//   Latency: the network all_gather among H plus two arena synchronisations.
//   Identity: each use's readers check whom they read (the leader reads everyone in step 1), so
//   ranks in different collectives fail with kMismatch.
#include <algorithm>
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"
#include "algorithms/ring_pass.h"

namespace smddp::algo {
namespace {

using hier::crossAlgorithm;
using hier::HostBlocks;
using hier::pieceOf;

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

}  // namespace

void allGatherHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int index = groups.layout.localIndex(exec.rank());
  {
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    CollectiveArgs part = args;
    part.blocks.clear();
    for (int h = 0; h < hosts; ++h) {
      part.blocks.push_back(args.block(static_cast<size_t>(groups.layout.ranksOf[h][index])));
    }
    crossAlgorithm(CollectiveKind::kAllGather, args.bytes(), hosts).run(cross, part);
    cross.waitAll();
  }
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (hier::allGatherHostInPlace(local, groups, args)) return;
  const int ranksHere = local.size();
  const size_t es = args.elementSize();
  const size_t piece = arena::piecePer(local, es, static_cast<size_t>(hosts), 2) / es;
  const patterns::Range whole{0, args.count};
  for (size_t at = 0; at < args.count; at += piece) {
    const size_t bytes = pieceOf(whole, at, piece) * es;
    arena::SlotStep step(local);
    step.acquire();
    for (int h = 0; h < hosts; ++h) {
      const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][index]);
      const auto* from = static_cast<const unsigned char*>(args.block(owner));
      std::memcpy(step.mine() + static_cast<size_t>(h) * piece * es, from + at * es, bytes);
    }
    step.publish(1);
    for (int k = 1; k < ranksHere; ++k) {
      const int q = (index + k) % ranksHere;
      step.await(q, 1);
      for (int h = 0; h < hosts; ++h) {
        const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][q]);
        auto* to = static_cast<unsigned char*>(args.block(owner));
        std::memcpy(to + at * es, step.slotOf(q) + static_cast<size_t>(h) * piece * es, bytes);
      }
    }
    step.release();
  }
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

}  // namespace smddp::algo
