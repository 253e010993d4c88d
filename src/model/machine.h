// SPDX-License-Identifier: Apache-2.0
// Machine: what the cost model (costs.h) needs to know of a communicator's hardware, per link
// class, on H nodes (hosts) of L ranks each:
// - network (between nodes): net_alpha seconds per message step, msg_alpha seconds more per
//   message a node sends in that step (its network stack's CPU time; 0 for a NIC that offloads
//   it; msg_share nodes whose stacks share the busiest CPU, when a testbed has more hosts than
//   CPUs), net_rate bytes/s per node and direction, net_eff the fraction of it a transfer gets;
//   link_burst bytes a node's link lets through at once before its rate applies (a token bucket,
//   as the testbed's rate limiter; 0 for a plain link);
// - arena (within a node): arena_alpha seconds per synchronisation, copy_rate bytes/s one rank
//   copies, gamma seconds per byte one rank reduces, cpu_share ranks of a node per CPU they may
//   use (> 1: ranks take turns, so a node's copies and reductions take that many times longer);
// - call_alpha: seconds every call costs on top of its algorithm (the path from the caller to the
//   engine and back: a synchronous engine call, or the torch backend's Work);
// - slot_bytes, segment_bytes: the arena's slot and segment sizes (its chunks);
// - the NCCL plane (costs.h, ncclSeconds): gpu_alpha seconds per step of NCCL's ring (a
//   kernel's hand-off to the next GPU), gpu_rate bytes/s one GPU sends to the next within a node
//   (its in-node fabric: NVLink, or PCIe).
// Invariant: plain data; rates > 0; the defaults are priors for a 2-core VM of this project's
// class (params.cc says where each comes from).
#pragma once

#include <cstddef>
#include <string>

namespace smddp::model {

struct Machine {
  int nodes = 1;
  int per_node = 1;
  double net_alpha = 15e-6;
  double net_rate = 1.25e8;  // 1 Gbit/s
  double net_eff = 1.0;
  double msg_alpha = 0.0;
  double msg_share = 1.0;
  double link_burst = 0.0;
  double arena_alpha = 2e-6;
  double copy_rate = 8e9;
  double gamma = 1.0 / 8e9;
  double cpu_share = 1.0;
  double call_alpha = 0.0;
  double slot_bytes = 1 << 20;
  double segment_bytes = 1 << 20;
  double gpu_alpha = 6e-6;
  double gpu_rate = 360e9;

  int ranks() const { return nodes * per_node; }
  // CPU seconds per message on the busiest CPU: msg_alpha for each node sharing it.
  double msgCost() const { return msg_alpha * msg_share; }
  // Seconds per byte through one node's link (one direction).
  double netBeta() const { return 1.0 / (net_rate * net_eff); }
  // Seconds per byte one rank copies within its node, its CPU shared as cpu_share says.
  double copyBeta() const { return cpu_share / copy_rate; }
  // Seconds per byte one rank reduces, likewise.
  double reduceBeta() const { return cpu_share * gamma; }
  // The arena's chunk: one slot, capped by the segment.
  double chunkBytes() const { return slot_bytes < segment_bytes ? slot_bytes : segment_bytes; }
};

// The Machine's real-valued parameters by name, in the order of the C ABI's array (after nodes and
// per_node) and the parameter file's keys; `positive`: must be > 0, else >= 0.
struct MachineField {
  const char* name;
  double Machine::*value;
  bool positive;
};
inline constexpr MachineField kMachineFields[] = {
    {"net_alpha", &Machine::net_alpha, false},     {"net_rate", &Machine::net_rate, true},
    {"net_eff", &Machine::net_eff, true},          {"msg_alpha", &Machine::msg_alpha, false},
    {"msg_share", &Machine::msg_share, true},      {"link_burst", &Machine::link_burst, false},
    {"arena_alpha", &Machine::arena_alpha, false}, {"copy_rate", &Machine::copy_rate, true},
    {"gamma", &Machine::gamma, false},             {"cpu_share", &Machine::cpu_share, true},
    {"call_alpha", &Machine::call_alpha, false},   {"slot_bytes", &Machine::slot_bytes, true},
    {"segment_bytes", &Machine::segment_bytes, true},
    {"gpu_alpha", &Machine::gpu_alpha, false},     {"gpu_rate", &Machine::gpu_rate, true},
};

}  // namespace smddp::model
