// SPDX-License-Identifier: Apache-2.0
// all_reduce's costs (forms.h). The flat algorithms run over all n = H L ranks in rank order (a
// node's ranks consecutive, so a ring crosses each node boundary once); within one node they
// send messages through the provider's shared memory (net_alpha each, at the copy rate).
// hier_split: an arena reduce-scatter, one cross-node all_reduce of each rank's block, an arena
// all-gather (hierarchical_all_reduce.cc); hier_direct chunk by chunk (one arena slot), a cross
// recursive doubling per chunk from every rank; hier_leader the same from one rank per node,
// with a second arena synchronisation. The arena forms (arena/all_reduce.cc, arena/pooled.cc)
// on one node.
#include <cmath>
#include <cstring>

#include "algorithms/registry.h"
#include "model/forms.h"

namespace smddp::model::forms {

double cross(const Machine& m, double part, int senders) {
  const int h = m.nodes;
  if (h == 1 || part <= 0) return 0.0;
  const double L = senders > 0 ? senders : m.per_node;
  if (part > static_cast<double>(algo::crossRingMinBytes(h))) {
    // A ring moves 2(H-1)/H x part per rank, L x that through the node's link, in segments
    // pipelined behind each other: the step latency is paid once per step, not per segment.
    const double steps = 2.0 * (h - 1);
    const double wire = steps * L * part / h * m.netBeta();
    return steps * (m.net_alpha + L * m.msgCost()) + wire + (h - 1.0) / h * part * m.reduceBeta();
  }
  return rdSteps(h) * (m.net_alpha + L * (m.msgCost() + part * m.netBeta())) +
         log2Ceil(h) * part * m.reduceBeta();
}

double crossLinkBytes(const Machine& m, double part, int senders) {
  const int h = m.nodes;
  if (h == 1 || part <= 0) return 0.0;
  const double L = senders > 0 ? senders : m.per_node;
  if (part > static_cast<double>(algo::crossRingMinBytes(h))) return 2.0 * (h - 1) * L * part / h;
  // Recursive doubling over H not a power of two folds into and unfolds from log2 H partners.
  const int p = floorPow2(h);
  return (log2Ceil(p) + (p != h ? 1 : 0)) * L * part;
}

double ring(const Machine& m, double bytes) {
  const int n = m.ranks();
  if (n == 1) return 0.0;
  const double piece = bytes / n;
  double step;
  if (m.nodes > 1) {  // every step: one edge per node boundary, the others within a node
    const double within = m.per_node > 1 ? m.copyBeta() : 0.0;
    step = m.net_alpha + m.per_node * m.msgCost() + piece * std::max(m.netBeta(), within);
  } else {
    step = m.arena_alpha + piece * m.copyBeta();
  }
  return 2.0 * (n - 1) * step + (n - 1.0) / n * bytes * m.reduceBeta();
}

double recursiveDoubling(const Machine& m, double bytes) {
  const int n = m.ranks();
  if (n == 1) return 0.0;
  const int p = floorPow2(n);
  double t = 0.0;
  for (int k = 0; k < log2Ceil(p); ++k) {
    if ((1 << k) < m.per_node) {  // partner on the same node: a message all the same
      t += m.net_alpha + m.per_node * m.msgCost() + bytes * m.copyBeta();
    } else {  // every rank of the node sends the whole buffer across at once
      t += m.net_alpha + m.per_node * (m.msgCost() + bytes * m.netBeta());
    }
    t += bytes * m.reduceBeta();
  }
  // Fold and unfold (n not a power of two) pair neighbours: on one node when it has >= 2 ranks.
  const int extra = rdSteps(n) - log2Ceil(p);
  const double hop = m.per_node > 1 ? bytes * m.copyBeta() : bytes * m.netBeta();
  return t + extra * (m.net_alpha + m.msgCost() + hop);
}

double hierSplit(const Machine& m, double bytes) {
  const double L = m.per_node;
  const double block = bytes / L;
  const double piece = std::max(1.0, m.chunkBytes() / L);  // per block and arena use
  const double usesRs = std::ceil(block / piece);
  const double usesAg =
      std::ceil(block / std::max(1.0, std::min(std::floor(m.slot_bytes / 2), m.segment_bytes)));
  const double scatter =
      2 * usesRs * m.arena_alpha + bytes * m.copyBeta() + (L - 1) * block * m.reduceBeta();
  const double gather = 2 * usesAg * m.arena_alpha + (block + bytes) * m.copyBeta();
  return scatter + cross(m, block) + gather;
}

double hierDirect(const Machine& m, double bytes) {
  const double L = m.per_node;
  const double chunk = m.chunkBytes();
  const double each = std::min(bytes, chunk);
  const double local = m.arena_alpha + each * m.copyBeta() + (L - 1) * each * m.reduceBeta();
  return uses(bytes, chunk) * (local + cross(m, each));
}

double hierLeader(const Machine& m, double bytes) {
  // Per chunk (one arena slot): every rank copies in, the leader reduces, all_reduces the chunk
  // with the other nodes' leaders and copies the result into its slot, the others copy it out.
  const double L = m.per_node;
  const double chunk = m.chunkBytes();
  const double each = std::min(bytes, chunk);
  const double local =
      2 * m.arena_alpha + 3 * each * m.copyBeta() + (L - 1) * each * m.reduceBeta();
  return uses(bytes, chunk) * (local + cross(m, each, 1));
}

double arenaDirect(const Machine& m, double bytes) {
  // Per chunk (one slot): copy in, publish, wait for every rank's, every rank reduces all n
  // chunks, release; the next use of the slot waits for every release: two synchronisations.
  const double n = m.per_node;
  const double chunk = m.chunkBytes();
  const double each = std::min(bytes, chunk);
  return uses(bytes, chunk) *
         (2 * m.arena_alpha + each * m.copyBeta() + (n - 1) * each * m.reduceBeta());
}

double arenaSplit(const Machine& m, double bytes) {
  // Per chunk (half a slot): copy in (n-1)/n of it, reduce (n-1) slices of 1/n, copy all out;
  // two synchronisations.
  const double n = m.per_node;
  return 2 * uses(bytes, m.chunkBytes() / 2) * m.arena_alpha +
         ((n - 1) / n + 1) * bytes * m.copyBeta() + (n - 1) / n * bytes * m.reduceBeta();
}

double pooledAllReduce(const Machine& m, double bytes) {
  // In place: three synchronisations; rank r reduces its slice from every input and writes it
  // into every output (each byte read and written once, the reduction split n ways).
  const double n = m.per_node;
  return 3 * m.arena_alpha + bytes * m.copyBeta() + (n - 1) / n * bytes * m.reduceBeta();
}

double allReduceLink(const Machine& m, const char* name, double bytes) {
  if (m.nodes == 1) return 0.0;
  const int n = m.ranks();
  const double L = m.per_node;
  if (std::strcmp(name, "ring") == 0) return 2.0 * (n - 1) / n * bytes;
  if (std::strcmp(name, "recursive_doubling") == 0) {
    const int p = floorPow2(n);
    int across = 0;
    for (int k = 0; k < log2Ceil(p); ++k) across += (1 << k) >= m.per_node ? 1 : 0;
    const int folds = m.per_node == 1 ? (rdSteps(n) - log2Ceil(p)) / 2 : 0;
    return (across + folds) * L * bytes;
  }
  if (std::strcmp(name, "hier_split") == 0) return crossLinkBytes(m, bytes / L);
  const int senders = std::strcmp(name, "hier_leader") == 0 ? 1 : 0;
  const double chunk = m.chunkBytes();
  const double full = std::floor(bytes / chunk);
  const double rest = bytes - full * chunk;
  return full * crossLinkBytes(m, chunk, senders) + crossLinkBytes(m, rest, senders);
}

}  // namespace smddp::model::forms
