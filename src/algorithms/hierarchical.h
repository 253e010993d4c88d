// SPDX-License-Identifier: Apache-2.0
// What the hierarchical algorithms share: a communicator over several hosts with the same number
// L >= 2 of ranks each and an arena per host (exec.h: HostGroups). Each runs its arena phases in
// a view of the host's ranks (no messages) and its network phases in a view of its cross group
// (the ranks with its local index, one per host, in host order), so every rank of a host drives
// its own network path and a host's paths all work at once.
// Each collective's hierarchical forms live in one file:
//   all_reduce      hierarchical_all_reduce.cc       hier_leader, hier_direct, hier_split;
//   all_gather      hierarchical_all_gather.cc       hier, hier_leader (small messages);
//   reduce_scatter  hierarchical_reduce_scatter.cc   hier, hier_leader (small messages);
//   broadcast       hierarchical_broadcast.cc        hier, hier_leader (small messages);
//   barrier         hierarchical_barrier.cc          hier;
//   reduce          hierarchical_reduce.cc           hier;
//   gather, scatter hierarchical_gather_scatter.cc   hier;
//   all_to_all      hierarchical_all_to_all.cc       hier, hier_leader.
// The arena steps several of them share (hostBroadcast, hostGather, hostScatter, hostAllGather)
// are in hierarchical_host_steps.cc, their host phases on tensors in shareable memory in
// hierarchical_in_place.cc.
// Hosts with different numbers of ranks (HostLayout::unevenHierarchical) can run the forms with
// one rank per host on the network (selector.cc says at which sizes): all_reduce, broadcast,
// all_gather, reduce_scatter and all_to_all hier_leader, barrier, reduce, gather and scatter hier
// (their carriers: the root and the other hosts' leaders).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "algorithms/exec.h"
#include "algorithms/patterns/ring.h"
#include "algorithms/registry.h"
#include "algorithms/ring_pass.h"
#include "smddp/error.h"

namespace smddp::algo::hier {

inline const HostGroups& requireHosts(const Exec& exec) {
  if (exec.hosts() == nullptr || exec.hosts()->layout.hosts() < 2) {
    throw Error(ErrorCode::kInvalidArgument,
                exec.head() +
                    ": a hierarchical algorithm needs ranks on several hosts, the same number "
                    "(>= 2) on each, and the shared-memory arena on every host");
  }
  return *exec.hosts();
}

// AVG is summed everywhere and divided once, by all n ranks, at the end.
inline CollectiveArgs summed(const CollectiveArgs& args) {
  CollectiveArgs sum = args;
  if (sum.op == ReduceOp::kAvg) sum.op = ReduceOp::kSum;
  return sum;
}

// Elements of `block` from `at`, at most `piece` of them (0 past its end).
inline size_t pieceOf(const patterns::Range& block, size_t at, size_t piece) {
  return at < block.count ? std::min(piece, block.count - at) : 0;
}

// The flat algorithm the selector picks for `kind` and `bytes` among the H ranks of a cross group.
inline const Algorithm& crossAlgorithm(CollectiveKind kind, size_t bytes, int hosts) {
  Topology flat;
  flat.ranks = hosts;
  flat.hosts = hosts;
  return selectAlgorithm(kind, bytes, flat, {});
}

// The index of the host `rank` is on; throws kInvalidArgument naming the collective when the
// communicator has no such rank.
inline int hostOf(const Exec& exec, const HostGroups& groups, int rank) {
  if (rank < 0 || static_cast<size_t>(rank) >= groups.layout.hostOf.size()) {
    throw Error(ErrorCode::kInvalidArgument, exec.head() + ": no rank " + std::to_string(rank));
  }
  return groups.layout.hostOf[static_cast<size_t>(rank)];
}

// The ranks that carry each host's part of a rooted collective (broadcast, reduce, gather,
// scatter) over the network, in host order: the root on its own host; on the others the rank of
// the root's local index where every host has the same number of ranks (so a host's ranks take
// turns as roots change), the host's leader (local index 0) where the hosts differ.
inline std::vector<int> carriers(const patterns::HostLayout& layout, int root) {
  const int rootHost = layout.hostOf[static_cast<size_t>(root)];
  const size_t index = layout.ranksPerHost() > 0 ? static_cast<size_t>(layout.localIndex(root)) : 0;
  std::vector<int> ranks;
  for (int h = 0; h < layout.hosts(); ++h) {
    ranks.push_back(h == rootHost ? root : layout.ranksOf[static_cast<size_t>(h)][index]);
  }
  return ranks;
}

// One rank's view of a rooted collective across hosts (reduce, gather, scatter hier): where the
// root is, every host's carrier, this host's ranks (an arena view, no messages), and what this
// rank is.
struct Rooted {
  const HostGroups& groups;
  int rootHost;
  std::vector<int> carriers;  // one per host, in host order
  const std::vector<size_t>& firsts;  // HostGroups::hostFirsts
  size_t myHost;
  int index;  // this host's carrier's local index
  Exec local;
  size_t perHost;
  bool carrier;
  bool isRoot;

  Rooted(Exec& exec, const CollectiveArgs& args)
      : groups(hier::requireHosts(exec)),
        rootHost(hier::hostOf(exec, groups, args.root)),
        carriers(hier::carriers(groups.layout, args.root)),
        firsts(groups.hostFirsts),
        myHost(static_cast<size_t>(groups.layout.hostOf[static_cast<size_t>(exec.rank())])),
        index(groups.layout.localIndex(carriers[myHost])),
        local(exec, groups.local, groups.localSettings, 0),
        perHost(static_cast<size_t>(local.size())),
        carrier(local.rank() == index),
        isRoot(exec.rank() == args.root) {}

  size_t hosts() const { return carriers.size(); }
  // Host h's pack of `block`-byte blocks: where it starts in the host-major whole, and its size.
  size_t packAt(size_t h, size_t block) const { return firsts[h] * block; }
  size_t packBytes(size_t h, size_t block) const { return (firsts[h + 1] - firsts[h]) * block; }
};

// The leaders' blocks in a host-major buffer of `elems` elements per rank (all_gather's and
// reduce_scatter's hier_leader): host h's L_h blocks from `base`, as a ring layout with one
// (differently sized) block per host. Without a base (the ranks that are not leaders) only the
// sizes, for the ring's geometry.
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

// all_reduce of `count` elements at `buffer`, in place, with this rank's cross group (ring above
// crossRingMinBytes, recursive doubling below); message indices from msgBase on. Returns the next
// free message index, the same on every rank of the cross group.
uint64_t crossAllReduce(Exec& exec, const HostGroups& groups, const CollectiveArgs& sum,
                        void* buffer, size_t count, uint64_t msgBase);

// Arena broadcast of `bytes` from local rank `source` (its `from`) into every other rank's `out`,
// a slot at a time; every rank publishes and checks every other's identity (the source reads no
// slot, so it checks them here).
void hostBroadcast(Exec& local, int source, const unsigned char* from, unsigned char* out,
                   size_t bytes, size_t es);

// Arena gather of every local rank's `block` bytes (its `own`) to local rank `collector`, into
// `pack` in local rank order (block q at q x block), a slot at a time; the collector checks
// every other's identity, the others the collector's.
void hostGather(Exec& local, int collector, const unsigned char* own, size_t block, size_t es,
                unsigned char* pack);

// The reverse: local rank `source` hands out `pack` (L blocks of `block` bytes in local rank
// order), each rank receiving its own block in `out`, a piece of each per use; the source checks
// every other's identity, the others the source's.
void hostScatter(Exec& local, int source, const unsigned char* pack, size_t block, size_t es,
                 unsigned char* out);

// Arena all-gather of a buffer of `count` elements cut into the host's L blocks
// (patterns::ringChunk; block r: local index r, finished in out on rank r) to every rank of the
// host. Per use each rank copies a piece of its own block into its slot; the others copy it out.
void hostAllGather(Exec& local, size_t count, size_t es, unsigned char* out);

// The arena phases above on tensors in the host's shareable memory (hierarchical_in_place.cc):
// from kInPlaceMinBytes each agrees with the host's ranks and returns false, having moved nothing,
// when a buffer it would read in a peer is not shareable (the caller runs the arena phase); on a
// host of one rank, or below kInPlaceMinBytes, each returns false at once.
//   allGatherHostInPlace       all_gather's phase 2: blocks (0, q) .. (H-1, q) of every local
//                              peer q copied from q's output (after the network phase);
//   hostReduceScatterInPlace   reduce_scatter's phase 1: `partials` block h = the block of rank
//                              (h, own index) reduced over the host's inputs in local rank order;
//   hostBroadcastInPlace       the root's host: arena::broadcastInPlace from local rank `source`;
//   hostAllGatherInPlace       hostAllGather: the other blocks copied from their owners' outputs;
//   allReduceLeaderInPlace     hier_leader all_reduce whole (`exec`: the communicator, `local`:
//                              its host group): per chunk the leader reduces the
//                              host's inputs, all_reduces the chunk with the other leaders and
//                              publishes it; the others copy it from the leader's output.
bool allGatherHostInPlace(Exec& local, const HostGroups& groups, const CollectiveArgs& args);
bool hostReduceScatterInPlace(Exec& local, const HostGroups& groups, const CollectiveArgs& sum,
                              unsigned char* partials);
bool hostBroadcastInPlace(Exec& local, int source, const CollectiveArgs& args);
bool hostAllGatherInPlace(Exec& local, const CollectiveArgs& args);
bool allReduceLeaderInPlace(Exec& exec, Exec& local, const HostGroups& groups,
                            const CollectiveArgs& args);

// Every block of `out` (count elements cut as patterns::ringChunk over the host's ranks) but
// this rank's copied from its owner's output `outs[q]` (mapped).
void copyFromOwners(Exec& local, const std::vector<unsigned char*>& outs, size_t count, size_t es,
                    unsigned char* out);

}  // namespace smddp::algo::hier
