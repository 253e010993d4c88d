# SPDX-License-Identifier: Apache-2.0
"""Alpha-beta costs of smddp's all_to_all algorithms on H nodes x L ranks per node (the Machine of
costs.py). `size` is one rank's whole send buffer (n blocks of size / n bytes, alltoall_perf's
size); each function returns seconds for one call.

No algorithm can shrink an all_to_all's bytes: every node sends L (n - L) blocks across, each
through its one link, whatever the algorithm; they differ in how many messages carry them and in
the copies within the node (docs/algorithms.md, src/algorithms/hierarchical_all_to_all.cc):
  pairwise     every rank sends n - 1 messages, at most 8 steps in flight at once (a window),
               within the node too (messages through the node's shared memory, at copy_rate);
  hier         an arena all_to_all of packs within the node (one synchronisation; every byte
               copied in and out), then every rank sends one message to its counterpart on each
               other node (H - 1 per rank, L blocks each), unpacked into the output;
  hier_leader  the node's leader gathers the node's buffers through the arena, sends each other
               node's leader one message (L x L blocks) and hands the outputs back: two arena
               passes, H - 1 messages per node.
A message a node sends costs its CPU msg_alpha (times msg_share: costs.Machine), a step net_alpha; the bytes pass the link at
net_rate x net_eff (costs.Machine). Invariant: pure functions of (machine, size).
"""
import math

WINDOW = 8                         # all_to_all_pairwise.cc: kWindow
HIER_BLOCK_MAX_BYTES = 16 * 1024   # selector.cc: kAllToAllHierBlockBytes
LEADER_TOTAL_MAX_BYTES = 16 * 1024  # selector.cc: kAllToAllHierLeaderTotalBytes


def _block(m, size):
    return size / m.ranks


def pairwise(m, size):
    n, L = m.ranks, m.per_node
    if n == 1:
        return size / m.copy_rate
    b = _block(m, size)
    windows = math.ceil((n - 1) / WINDOW)
    across = L * (n - L)   # messages a node sends to other nodes
    within = L * (L - 1)   # and to its own ranks
    t = windows * m.net_alpha + (across + within) * m.msg_cost
    # every rank moves its node's L blocks (L - 1 messages and its own) at copy_rate, at once
    return t + across * b * m.net_beta() + L * b / m.copy_rate


def hier(m, size):
    n, L, h = m.ranks, m.per_node, m.nodes
    b = _block(m, size)
    slot_uses = max(1, math.ceil(size / m.slot_bytes))
    local = 2 * slot_uses * m.arena_alpha + 3 * size / m.copy_rate  # pack, arena in and out
    across = L * (h - 1)  # messages a node sends: one per rank and other node
    wire = L * (n - L) * b * m.net_beta()
    return local + m.net_alpha + across * m.msg_cost + wire + size / m.copy_rate


def hier_leader(m, size):
    L, h = m.per_node, m.nodes
    b = _block(m, size)
    # two arena passes of two synchronisations; the leader copies the node's buffers out, into
    # the cross packs and the outputs back in (3 L buffers), every rank its own in and out
    local = 4 * m.arena_alpha + (3 * L + 2) * size / m.copy_rate
    wire = L * L * (h - 1) * b * m.net_beta()
    return local + m.net_alpha + (h - 1) * m.msg_cost + wire


ALGORITHMS = {"pairwise": pairwise, "hier": hier, "hier_leader": hier_leader}


def link_bytes(m, name, size):
    """Bytes through a node's link per direction: the same for every algorithm."""
    if m.nodes == 1:
        return 0.0
    return m.per_node * (m.ranks - m.per_node) * _block(m, size)


def applicable(m):
    return ["pairwise"] + (["hier", "hier_leader"] if m.nodes > 1 and m.per_node > 1 else [])


def selected(m, size):
    """What smddp's selector runs across nodes (selector.cc)."""
    if m.nodes > 1 and m.per_node > 1:
        if size <= LEADER_TOTAL_MAX_BYTES:
            return "hier_leader"
        return "hier" if _block(m, size) <= HIER_BLOCK_MAX_BYTES else "pairwise"
    return "pairwise"
