// SPDX-License-Identifier: Apache-2.0
// The table of costed algorithms (collective, selector name, cost, link bytes) and the token
// bucket's rule (costs.h).
#include "model/costs.h"

#include <limits>

#include "model/forms.h"
#include "smddp/error.h"

namespace smddp::model {
namespace {

using K = CollectiveKind;
using forms::Cost;

struct Form {
  K kind;
  const char* name;
  Cost cost;
};

// The rooted collectives: the shapes of their closest relatives (a reduce is a broadcast's tree
// run backwards with a reduction per step; a gather or scatter moves every block to or from one
// rank).
double reduceBinomial(const Machine& m, double bytes) {
  return forms::broadcastBinomial(m, bytes) + forms::log2Ceil(m.ranks()) * bytes * m.reduceBeta();
}
double reduceArena(const Machine& m, double bytes) {
  return 2 * forms::uses(bytes, m.chunkBytes()) * m.arena_alpha + bytes * m.copyBeta() +
         (m.per_node - 1) * bytes * m.reduceBeta();
}
double reduceHier(const Machine& m, double bytes) {
  Machine hosts = m;
  hosts.per_node = 1;
  return reduceArena(m, bytes) + reduceBinomial(hosts, bytes);
}
double gatherLinear(const Machine& m, double bytes) {
  const double n = m.ranks();
  return forms::message(m, 0.0) + (n - 1) / n * bytes * (m.nodes > 1 ? m.netBeta() : m.copyBeta());
}
double gatherArena(const Machine& m, double bytes) {
  return 2 * forms::uses(bytes / m.per_node, m.chunkBytes()) * m.arena_alpha +
         (bytes + bytes / m.per_node) * m.copyBeta();
}
double gatherHier(const Machine& m, double bytes) {
  Machine hosts = m;
  hosts.per_node = 1;
  return gatherArena(m, bytes / m.nodes) + gatherLinear(hosts, bytes);
}

const Form kForms[] = {
    {K::kAllReduce, "ring", forms::ring},
    {K::kAllReduce, "recursive_doubling", forms::recursiveDoubling},
    {K::kAllReduce, "hier_split", forms::hierSplit},
    {K::kAllReduce, "hier_direct", forms::hierDirect},
    {K::kAllReduce, "hier_leader", forms::hierLeader},
    {K::kAllReduce, "arena_direct", forms::arenaDirect},
    {K::kAllReduce, "arena_split", forms::arenaSplit},
    {K::kAllReduce, "pooled", forms::pooledAllReduce},
    {K::kAllGather, "ring", forms::allGatherRing},
    {K::kAllGather, "bruck", forms::allGatherBruck},
    {K::kAllGather, "arena", forms::allGatherArena},
    {K::kAllGather, "pooled", forms::allGatherPooled},
    {K::kAllGather, "hier", forms::allGatherHier},
    {K::kAllGather, "hier_leader", forms::allGatherHierLeader},
    {K::kReduceScatter, "ring", forms::reduceScatterRing},
    {K::kReduceScatter, "arena", forms::reduceScatterArena},
    {K::kReduceScatter, "pooled", forms::reduceScatterPooled},
    {K::kReduceScatter, "hier", forms::reduceScatterHier},
    {K::kReduceScatter, "hier_leader", forms::reduceScatterHierLeader},
    {K::kBroadcast, "binomial", forms::broadcastBinomial},
    {K::kBroadcast, "chain", forms::broadcastChain},
    {K::kBroadcast, "arena", forms::broadcastArena},
    {K::kBroadcast, "arena_eager", forms::broadcastArenaEager},
    {K::kBroadcast, "pooled", forms::broadcastPooled},
    {K::kBroadcast, "hier", forms::broadcastHier},
    {K::kBroadcast, "hier_leader", forms::broadcastHierLeader},
    {K::kBarrier, "dissemination", forms::barrierDissemination},
    {K::kBarrier, "arena", forms::barrierArena},
    {K::kBarrier, "hier", forms::barrierHier},
    {K::kReduce, "binomial", reduceBinomial},
    {K::kReduce, "arena", reduceArena},
    {K::kReduce, "hier", reduceHier},
    {K::kGather, "linear", gatherLinear},
    {K::kGather, "arena", gatherArena},
    {K::kGather, "hier", gatherHier},
    {K::kScatter, "linear", gatherLinear},
    {K::kScatter, "arena", gatherArena},
    {K::kScatter, "hier", gatherHier},
    {K::kAllToAll, "pairwise", forms::allToAllPairwise},
    {K::kAllToAll, "arena", forms::allToAllArena},
    {K::kAllToAll, "hier", forms::allToAllHier},
    {K::kAllToAll, "hier_leader", forms::allToAllHierLeader},
    {K::kAllToAllV, "pairwise", forms::allToAllPairwise},
    {K::kAllToAllV, "arena", forms::allToAllArena},
    {K::kAllToAllV, "hier", forms::allToAllHier},
    {K::kSend, "message", forms::message},
    {K::kRecv, "message", forms::message},
};

const Form& find(K kind, const std::string& algorithm) {
  for (const Form& f : kForms) {
    if (f.kind == kind && algorithm == f.name) return f;
  }
  throw Error(ErrorCode::kInvalidArgument, std::string("smddp: the cost model has no ") +
                                               toString(kind) + " algorithm named \"" +
                                               algorithm + "\"");
}

double linkBytes(const Machine& m, K kind, const char* name, double bytes) {
  switch (kind) {
    case K::kAllReduce:
      return forms::allReduceLink(m, name, bytes);
    case K::kAllToAll:
    case K::kAllToAllV:
      return forms::allToAllLink(m, bytes);
    default:
      return forms::collectiveLink(m, kind, bytes);
  }
}

}  // namespace

std::vector<std::string> algorithmsOf(CollectiveKind kind) {
  std::vector<std::string> names;
  for (const Form& f : kForms) {
    if (f.kind == kind) names.emplace_back(f.name);
  }
  return names;
}

bool modelled(CollectiveKind kind, const std::string& algorithm) {
  for (const Form& f : kForms) {
    if (f.kind == kind && algorithm == f.name) return true;
  }
  return false;
}

double sumSeconds(const Machine& m, CollectiveKind kind, const std::string& algorithm,
                  double bytes) {
  return find(kind, algorithm).cost(m, bytes);
}

Parts parts(const Machine& m, CollectiveKind kind, const std::string& algorithm, double bytes) {
  const Form& f = find(kind, algorithm);
  Machine fast = m;
  fast.net_rate = std::numeric_limits<double>::infinity();
  Machine unit = m;
  unit.net_rate = 1.0;
  unit.net_eff = 1.0;
  Parts p;
  p.latency = f.cost(fast, bytes);
  p.wire = f.cost(unit, bytes) - p.latency;
  p.busiest = linkBytes(m, kind, f.name, bytes);
  return p;
}

double seconds(const Machine& m, CollectiveKind kind, const std::string& algorithm,
               double bytes) {
  if (m.link_burst <= 0 || m.nodes == 1) return sumSeconds(m, kind, algorithm, bytes) + m.call_alpha;
  const Parts p = parts(m, kind, algorithm, bytes);
  const double beta = m.netBeta();
  const double burst = std::max(0.0, p.wire - m.link_burst);
  return std::max(p.busiest * beta, p.latency + burst * beta) + m.call_alpha;
}

double busbwFactor(CollectiveKind kind, int ranks) {
  const double n = ranks;
  switch (kind) {
    case K::kAllReduce:
      return n > 0 ? 2 * (n - 1) / n : 0.0;
    case K::kAllGather:
    case K::kReduceScatter:
    case K::kAllToAll:
    case K::kAllToAllV:
      return n > 0 ? (n - 1) / n : 0.0;
    default:
      return 1.0;
  }
}

}  // namespace smddp::model
