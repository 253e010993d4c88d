// SPDX-License-Identifier: Apache-2.0
// The NCCL plane's costs (costs.h, ncclSeconds): NCCL's ring as nccl-tests' bus bandwidth sees
// it. On n = H x L GPUs a ring all_reduce sends 2(n-1)/n of the buffer from every GPU in 2(n-1)
// steps; every link of the ring carries that much, the in-node ones at gpu_rate and the ones
// that leave a node (NCCL spreads its channels over the node's NICs, so a node's network carries
// one ring's crossing in all) at the node's net_rate x net_eff. all_gather and reduce_scatter
// are half of it; broadcast and reduce a pipelined chain (the buffer once, n-1 steps); gather
// and scatter the root's n-1 pieces through its links; all_to_all every GPU's off-node share
// through its node's network, the rest through the in-node fabric; a barrier a 1-element
// all_reduce; send and recv one step. NCCL's tree and NVLink SHARP forms, which beat the ring
// for large buffers on some machines, are not modelled: the ring is what NCCL reaches at least.
#include <algorithm>

#include "model/costs.h"

namespace smddp::model {
namespace {

// Bytes/s through the ring's slowest link.
double ringRate(const Machine& m) {
  const double network = m.net_rate * m.net_eff;
  return m.nodes > 1 ? std::min(m.gpu_rate, network) : m.gpu_rate;
}

}  // namespace

double ncclSeconds(const Machine& m, CollectiveKind kind, double bytes) {
  using K = CollectiveKind;
  const double n = m.ranks();
  const double rate = ringRate(m);
  double t = 0.0;
  if (n > 1) {
    switch (kind) {
      case K::kAllReduce:
        t = 2 * (n - 1) * m.gpu_alpha + 2 * (n - 1) / n * bytes / rate;
        break;
      case K::kBarrier:
        t = 2 * (n - 1) * m.gpu_alpha;
        break;
      case K::kAllGather:
      case K::kReduceScatter:
        t = (n - 1) * m.gpu_alpha + (n - 1) / n * bytes / rate;
        break;
      case K::kBroadcast:
      case K::kReduce:
        t = (n - 1) * m.gpu_alpha + bytes / rate;
        break;
      case K::kGather:
      case K::kScatter:
        t = m.gpu_alpha + (n - 1) / n * bytes / rate;
        break;
      case K::kAllToAll:
      case K::kAllToAllV: {
        const double local = (m.per_node - 1) / n * bytes / m.gpu_rate;
        const double away = m.per_node * (n - m.per_node) / n * bytes / (m.net_rate * m.net_eff);
        t = m.gpu_alpha + std::max(local, away);
        break;
      }
      case K::kSend:
      case K::kRecv:
        t = m.gpu_alpha + bytes / rate;
        break;
      default:
        break;
    }
  }
  return m.call_alpha + t;
}

}  // namespace smddp::model
