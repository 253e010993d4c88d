// SPDX-License-Identifier: Apache-2.0
// Costs of all_gather, reduce_scatter, broadcast, barrier, reduce, gather, scatter and one
// message (forms.h). b is one rank's block (size / n). The flat algorithms take a step per
// message: across nodes net_alpha plus the CPU time of the messages the node sends at once
// (stepAlpha), within one node the provider's shared memory (arena_alpha a step, the copy rate);
// the arena forms follow arena/collectives.cc, arena/reduce_scatter.cc, arena/reduce.cc,
// arena/gather_scatter.cc and arena/pooled.cc; the hierarchical ones hierarchical_all_gather.cc,
// hierarchical_reduce_scatter.cc, hierarchical_broadcast.cc, hierarchical_barrier.cc,
// hierarchical_reduce.cc and hierarchical_gather_scatter.cc (a network phase among the H hosts,
// the arena within each).
#include "model/forms.h"

namespace smddp::model::forms {
namespace {

constexpr double kSmallTotalBytes = 64 * 1024;  // selector.cc: bruck / binomial up to this

// A flat step's latency with `senders` ranks of a node sending at once.
double stepAlpha(const Machine& m, double senders) {
  return m.nodes > 1 ? m.net_alpha + senders * m.msgCost() : m.arena_alpha;
}
// Seconds per byte of a flat step's message: across the node's link (every rank of it at once)
// or within one node.
double stepBeta(const Machine& m) {
  return m.nodes > 1 ? std::max(m.per_node * m.netBeta(), m.per_node > 1 ? m.copyBeta() : 0.0)
                     : m.copyBeta();
}
double block(const Machine& m, double bytes) { return bytes / m.ranks(); }
// The hosts as ranks of one network group, one sender per host (the leaders) or all L.
Machine hostsOnly(const Machine& m, int senders) {
  Machine h = m;
  h.per_node = 1;
  h.msg_alpha = m.msg_alpha * senders;
  h.net_rate = m.net_rate / senders;  // `senders` streams share the node's link
  return h;
}
double ringSteps(const Machine& m, double piece, double steps) {
  return steps * (stepAlpha(m, m.per_node) + piece * stepBeta(m));
}

}  // namespace

double allGatherRing(const Machine& m, double bytes) {
  const int n = m.ranks();
  return n == 1 ? 0.0 : ringSteps(m, block(m, bytes), n - 1);
}

double allGatherBruck(const Machine& m, double bytes) {
  const int n = m.ranks();
  if (n == 1) return 0.0;
  const double b = block(m, bytes);
  double t = 0.0;
  for (int k = 0; (1 << k) < n; ++k) {
    const double sent = std::min(1 << k, n - (1 << k)) * b;
    t += stepAlpha(m, m.per_node) + sent * stepBeta(m);
  }
  return t + bytes * m.copyBeta();  // the final rotation into place
}

double allGatherArena(const Machine& m, double bytes) {
  const double b = block(m, bytes);
  return 2 * uses(b, m.slot_bytes / 2) * m.arena_alpha + bytes * m.copyBeta();
}

double allGatherPooled(const Machine& m, double bytes) {
  return 3 * m.arena_alpha + bytes * m.copyBeta();  // every block read once, in place
}

double allGatherHier(const Machine& m, double bytes) {
  // network: each rank all_gathers its block with its cross group (H ranks, L groups at once);
  // arena: every rank copies its H blocks in, the others copy them out.
  const double b = block(m, bytes);
  const Machine h = hostsOnly(m, m.per_node);
  const double net = b * m.nodes <= kSmallTotalBytes ? allGatherBruck(h, b * m.nodes)
                                                     : allGatherRing(h, b * m.nodes);
  return net + 2 * uses(b * m.nodes, m.slot_bytes / 2) * m.arena_alpha + bytes * m.copyBeta();
}

double allGatherHierLeader(const Machine& m, double bytes) {
  // arena: the leader gathers the host's L blocks; network: the leaders all_gather them;
  // arena: the leader copies the n blocks in, the others out.
  const double b = block(m, bytes);
  const Machine h = hostsOnly(m, 1);
  const double net = bytes <= kSmallTotalBytes ? allGatherBruck(h, bytes) : allGatherRing(h, bytes);
  return 2 * m.arena_alpha + (1 + m.per_node) * b * m.copyBeta() + net +
         2 * uses(bytes, m.chunkBytes()) * m.arena_alpha + 2 * bytes * m.copyBeta();
}

double reduceScatterRing(const Machine& m, double bytes) {
  const int n = m.ranks();
  if (n == 1) return 0.0;
  return ringSteps(m, block(m, bytes), n - 1) + (n - 1.0) / n * bytes * m.reduceBeta();
}

double reduceScatterArena(const Machine& m, double bytes) {
  const double n = m.per_node;
  const double b = block(m, bytes);
  return 2 * uses(b, m.chunkBytes() / n) * m.arena_alpha + bytes * m.copyBeta() +
         (n - 1) * b * m.reduceBeta();
}

double reduceScatterPooled(const Machine& m, double bytes) {
  const double b = block(m, bytes);
  return 3 * m.arena_alpha + b * m.copyBeta() + (m.per_node - 1) * b * m.reduceBeta();
}

double reduceScatterHier(const Machine& m, double bytes) {
  // arena: every rank copies its input in and reduces H partial blocks over the host's L ranks;
  // network: ring reduce-scatter of the H partials in the cross group.
  const double L = m.per_node;
  const double b = block(m, bytes);
  const double local = 2 * uses(bytes, m.chunkBytes()) * m.arena_alpha + bytes * m.copyBeta() +
                       (L - 1) * m.nodes * b * m.reduceBeta();
  return local + reduceScatterRing(hostsOnly(m, m.per_node), b * m.nodes);
}

double reduceScatterHierLeader(const Machine& m, double bytes) {
  const double L = m.per_node;
  const double b = block(m, bytes);
  const double local = 2 * uses(bytes, m.chunkBytes()) * m.arena_alpha + bytes * m.copyBeta() +
                       (L - 1) * bytes * m.reduceBeta();
  const double scatter = 2 * m.arena_alpha + 2 * L * b * m.copyBeta();
  return local + reduceScatterRing(hostsOnly(m, 1), bytes) + scatter;
}

double broadcastBinomial(const Machine& m, double bytes) {
  const int n = m.ranks();
  return log2Ceil(n) * (stepAlpha(m, 1) + bytes * (m.nodes > 1 ? m.netBeta() : m.copyBeta()));
}

double broadcastChain(const Machine& m, double bytes) {
  // (n - 2 + G) segment transfers; segments as the chain cuts them (a slot's size here).
  const int n = m.ranks();
  if (n == 1) return 0.0;
  const double segments = uses(bytes, m.chunkBytes());
  const double each = std::min(bytes, m.chunkBytes());
  const double beta = m.nodes > 1 ? m.netBeta() : m.copyBeta();
  return (n - 2 + segments) * (stepAlpha(m, 1) + each * beta);
}

double broadcastArena(const Machine& m, double bytes) {
  const double chunk = m.chunkBytes();
  return 2 * uses(bytes, chunk) * m.arena_alpha + (bytes + std::min(bytes, chunk)) * m.copyBeta();
}

double broadcastArenaEager(const Machine& m, double bytes) {
  return m.arena_alpha + 2 * bytes * m.copyBeta();
}

double broadcastPooled(const Machine& m, double bytes) {
  return 3 * m.arena_alpha + bytes * m.copyBeta();
}

double broadcastHier(const Machine& m, double bytes) {
  // the root's host copies it through the arena; L slices cross to the other hosts at once;
  // every other host all-gathers the slices through its arena.
  const double L = m.per_node;
  const Machine h = hostsOnly(m, m.per_node);
  return broadcastArena(m, bytes) + broadcastBinomial(h, bytes / L) +
         2 * uses(bytes, m.chunkBytes()) * m.arena_alpha + bytes * m.copyBeta();
}

double broadcastHierLeader(const Machine& m, double bytes) {
  return broadcastBinomial(hostsOnly(m, 1), bytes) + broadcastArena(m, bytes);
}

double barrierDissemination(const Machine& m, double) {
  return log2Ceil(m.ranks()) * stepAlpha(m, m.per_node);
}

double barrierArena(const Machine& m, double) { return m.arena_alpha; }

double barrierHier(const Machine& m, double) {
  return 2 * m.arena_alpha + barrierDissemination(hostsOnly(m, 1), 0.0);
}

double message(const Machine& m, double bytes) {
  return stepAlpha(m, 1) + bytes * (m.nodes > 1 ? m.netBeta() : m.copyBeta());
}

double collectiveLink(const Machine& m, CollectiveKind kind, double bytes) {
  if (m.nodes == 1) return 0.0;
  const double h = m.nodes;
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter:
      return (h - 1) / h * bytes;
    case CollectiveKind::kBarrier:
      return 0.0;
    default:
      return bytes;
  }
}

}  // namespace smddp::model::forms
