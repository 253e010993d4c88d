// SPDX-License-Identifier: Apache-2.0
// The cost of each algorithm (costs.h's table): seconds for one call on a plain link, at the
// size costs.h defines, and the bytes it puts through a node's busiest link per direction.
// all_reduce in forms_all_reduce.cc, all_gather / reduce_scatter / broadcast / barrier / the
// rooted ones in forms_collectives.cc, all_to_all in forms_all_to_all.cc; the helpers shared
// by them (a message step, a cross-node all_reduce) here.
// Invariant: pure; every function is total for nodes, per_node >= 1 and bytes >= 0.
#pragma once

#include <algorithm>
#include <cmath>

#include "algorithms/patterns/common.h"
#include "common/call.h"
#include "model/machine.h"

namespace smddp::model::forms {

using Cost = double (*)(const Machine&, double bytes);

inline int log2Ceil(int n) { return algo::patterns::ceilLog2(n); }
inline int floorPow2(int n) { return algo::patterns::floorPowerOfTwo(n); }
// Recursive doubling's message steps on the critical path (fold and unfold when n is not a
// power of two).
inline int rdSteps(int n) {
  const int p = floorPow2(n);
  return log2Ceil(p) + (p != n ? 2 : 0);
}
inline double uses(double bytes, double per) {
  return std::max(1.0, std::ceil(bytes / std::max(1.0, per)));
}

// One cross-node all_reduce of `part` bytes per rank, `senders` ranks of a node at once (0: all
// L): a ring above crossRingMinBytes(H), recursive doubling below.
double cross(const Machine& m, double part, int senders = 0);
double crossLinkBytes(const Machine& m, double part, int senders = 0);

// all_reduce (forms_all_reduce.cc)
double ring(const Machine& m, double bytes);
double recursiveDoubling(const Machine& m, double bytes);
double hierSplit(const Machine& m, double bytes);
double hierDirect(const Machine& m, double bytes);
double hierLeader(const Machine& m, double bytes);
double arenaDirect(const Machine& m, double bytes);
double arenaSplit(const Machine& m, double bytes);
double pooledAllReduce(const Machine& m, double bytes);
double allReduceLink(const Machine& m, const char* name, double bytes);

// all_gather, reduce_scatter, broadcast, barrier, reduce, gather, scatter, send
// (forms_collectives.cc)
double allGatherRing(const Machine& m, double bytes);
double allGatherBruck(const Machine& m, double bytes);
double allGatherArena(const Machine& m, double bytes);
double allGatherPooled(const Machine& m, double bytes);
double allGatherHier(const Machine& m, double bytes);
double allGatherHierLeader(const Machine& m, double bytes);
double reduceScatterRing(const Machine& m, double bytes);
double reduceScatterArena(const Machine& m, double bytes);
double reduceScatterPooled(const Machine& m, double bytes);
double reduceScatterHier(const Machine& m, double bytes);
double reduceScatterHierLeader(const Machine& m, double bytes);
double broadcastBinomial(const Machine& m, double bytes);
double broadcastChain(const Machine& m, double bytes);
double broadcastArena(const Machine& m, double bytes);
double broadcastArenaEager(const Machine& m, double bytes);
double broadcastPooled(const Machine& m, double bytes);
double broadcastHier(const Machine& m, double bytes);
double broadcastHierLeader(const Machine& m, double bytes);
double barrierDissemination(const Machine& m, double bytes);
double barrierArena(const Machine& m, double bytes);
double barrierHier(const Machine& m, double bytes);
double message(const Machine& m, double bytes);
// Bytes through a node's busiest link per direction (every form of these collectives moves the
// same: what the host as a whole must send or receive, or one sender's whole buffer).
double collectiveLink(const Machine& m, CollectiveKind kind, double bytes);

// all_to_all (forms_all_to_all.cc)
double allToAllPairwise(const Machine& m, double bytes);
double allToAllArena(const Machine& m, double bytes);
double allToAllHier(const Machine& m, double bytes);
double allToAllHierLeader(const Machine& m, double bytes);
double allToAllLink(const Machine& m, double bytes);

}  // namespace smddp::model::forms
