// SPDX-License-Identifier: Apache-2.0
// all_to_all's costs (forms.h); `bytes` is one rank's whole send buffer (n blocks of b). No
// algorithm can shrink an all_to_all's bytes: every node sends L (n - L) blocks across, each
// through its one link; they differ in how many messages carry them and in the copies within
// the node (hierarchical_all_to_all.cc, all_to_all_pairwise.cc, arena/all_to_all.cc):
//   pairwise     every rank sends n - 1 messages, at most kWindow steps in flight at once, within
//                the node too (through the node's shared memory, at the copy rate);
//   arena        one node: per use every rank copies its pieces in and its part of every slot
//                out (every byte copied twice);
//   hier         an arena all_to_all of packs within the node, then every rank sends one message
//                to its counterpart on each other node (H - 1 per rank, L blocks each);
//   hier_leader  the node's leader gathers the node's buffers through the arena, sends each other
//                node's leader one message (L x L blocks) and hands the outputs back.
#include "model/forms.h"

namespace smddp::model::forms {
namespace {
constexpr double kWindow = 8;  // all_to_all_pairwise.cc: kWindow
}

double allToAllPairwise(const Machine& m, double bytes) {
  const double n = m.ranks(), L = m.per_node;
  if (n == 1) return bytes * m.copyBeta();
  const double b = bytes / n;
  const double windows = std::ceil((n - 1) / kWindow);
  const double across = L * (n - L);  // messages a node sends to other nodes
  const double within = L * (L - 1);  // and to its own ranks
  const double alpha = m.nodes > 1 ? m.net_alpha : m.arena_alpha;
  const double t = windows * alpha + (across + within) * m.msgCost();
  // every rank moves its node's L blocks (L - 1 messages and its own) at the copy rate, at once
  return t + across * b * m.netBeta() + L * b * m.copyBeta();
}

double allToAllArena(const Machine& m, double bytes) {
  const double n = m.per_node;
  return 2 * uses(bytes / n, m.chunkBytes() / n) * m.arena_alpha + 2 * bytes * m.copyBeta();
}

double allToAllHier(const Machine& m, double bytes) {
  const double n = m.ranks(), L = m.per_node, h = m.nodes;
  const double b = bytes / n;
  const double local =
      2 * uses(bytes, m.slot_bytes) * m.arena_alpha + 3 * bytes * m.copyBeta();  // pack, in, out
  const double across = L * (h - 1);  // messages a node sends: one per rank and other node
  const double wire = L * (n - L) * b * m.netBeta();
  return local + m.net_alpha + across * m.msgCost() + wire + bytes * m.copyBeta();
}

double allToAllHierLeader(const Machine& m, double bytes) {
  // two arena passes of two synchronisations; the leader copies the node's buffers out, into the
  // cross packs and the outputs back in (3 L buffers), every rank its own in and out
  const double n = m.ranks(), L = m.per_node, h = m.nodes;
  const double b = bytes / n;
  const double local = 4 * m.arena_alpha + (3 * L + 2) * bytes * m.copyBeta();
  const double wire = L * L * (h - 1) * b * m.netBeta();
  return local + m.net_alpha + (h - 1) * m.msgCost() + wire;
}

double allToAllLink(const Machine& m, double bytes) {
  if (m.nodes == 1) return 0.0;
  const double n = m.ranks(), L = m.per_node;
  return L * (n - L) * (bytes / n);
}

}  // namespace smddp::model::forms
