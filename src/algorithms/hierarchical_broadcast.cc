// SPDX-License-Identifier: Apache-2.0
// broadcast across H hosts with L ranks each (hierarchical.h). Rank (h, i) is the rank of local
// index i on host h (HostGroups::layout.ranksOf[h][i]); its cross group is (0, i) .. (H-1, i).
// The network phase of each is the flat algorithm the selector picks for H ranks (binomial or
// chain).
//
// broadcast (hier), root (r, j):
//   1. arena, on the root's host only: the root copies the buffer into its slot (per use); the
//      host's other ranks copy it out (hier::hostBroadcast);
//   2. network: rank (., i) broadcasts slice i of the buffer (patterns::ringChunk over L) from
//      (r, i) to its cross group;
//   3. arena, on the other hosts: all-gather of the L slices (hier::hostAllGather).
//   Each host receives the buffer once, in L slices over L paths in parallel.
//   From kInPlaceMinBytes, on tensors in the host's shareable memory, phases 1 and 3 read the
//   host's peers' buffers directly (hierarchical_in_place.cc).
//   Latency: one arena synchronisation per host plus the network algorithm's rounds among H
//   ranks instead of n.
//
// broadcast (hier_leader), small messages, root (r, j): one rank per host carries the host's
// whole part over the network, so each step puts one message per host on the wire instead of L
// (on a host whose network stack shares the ranks' cores, each message costs them CPU time).
// The carriers (hier::carriers: the root, and on the other hosts the rank of local index j, or
// the leader where the hosts differ) broadcast the whole buffer from the root to each other (the
// flat algorithm for H ranks); then on every host the carrier copies it into its slot per use and
// the others copy it out (from kInPlaceMinBytes, when the carrier's output is in shareable
// memory, straight from there). Latency: the network broadcast among H plus one arena
// synchronisation. Identity: the uses are symmetric (every rank checks every other's), so ranks
// in different collectives fail with kMismatch.
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"

namespace smddp::algo {
namespace {

using hier::crossAlgorithm;

}  // namespace

void broadcastHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int rootHost = hier::hostOf(exec, groups, args.root);  // the core checked root
  const int myHost = groups.layout.hostOf[static_cast<size_t>(exec.rank())];
  const size_t es = args.elementSize();
  auto* out = static_cast<unsigned char*>(args.recv);
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (myHost == rootHost) {
    const int root = groups.layout.localIndex(args.root);
    const auto* in = static_cast<const unsigned char*>(args.send);
    if (!hier::hostBroadcastInPlace(local, root, args)) {
      hier::hostBroadcast(local, root, in, out, args.bytes(), es);
      if (local.rank() == root && !args.inPlace()) std::memcpy(out, in, args.bytes());
    }
  }
  const patterns::Range slice = patterns::ringChunk(args.count, local.size(), local.rank());
  if (slice.count > 0) {  // the same for the whole cross group
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    CollectiveArgs part = args;
    part.send = part.recv = out + slice.begin * es;
    part.count = slice.count;
    part.root = rootHost;
    crossAlgorithm(CollectiveKind::kBroadcast, part.bytes(), hosts).run(cross, part);
    cross.waitAll();
  }
  if (myHost != rootHost && !hier::hostAllGatherInPlace(local, args)) {
    hier::hostAllGather(local, args.count, es, out);
  }
}

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

}  // namespace smddp::algo
