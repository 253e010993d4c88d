// SPDX-License-Identifier: Apache-2.0
#include "model/select.h"

#include "algorithms/registry.h"

namespace smddp::model {

double selectorBytes(CollectiveKind kind, double bytes, int ranks) {
  switch (kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter:
      return ranks > 0 ? bytes / ranks : bytes;
    default:
      return bytes;
  }
}

std::string selected(const Machine& m, CollectiveKind kind, double bytes) {
  if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv) return "message";
  algo::Topology t;
  t.ranks = m.ranks();
  t.hosts = m.nodes;
  t.arena = m.nodes == 1 && m.per_node > 1;
  t.pool = t.arena;
  t.eagerBytes = t.arena ? 4096 : 0;  // SMDDP_ARENA_EAGER_BYTES' default
  t.hostArenas = m.nodes > 1 && m.per_node > 1;
  const auto b = static_cast<size_t>(selectorBytes(kind, bytes, m.ranks()));
  return algo::selectAlgorithm(kind, b, t, {}).name;
}

bool kindOf(const std::string& name, CollectiveKind* kind) {
  for (int k = 1; k <= 15; ++k) {
    const auto c = static_cast<CollectiveKind>(k);
    if (name == toString(c)) {
      *kind = c;
      return true;
    }
  }
  return false;
}

}  // namespace smddp::model
