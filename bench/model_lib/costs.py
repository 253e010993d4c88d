# SPDX-License-Identifier: Apache-2.0
"""Alpha-beta-gamma costs of smddp's all_reduce algorithms on H nodes x L ranks per node.

A Machine holds what the costs need, per link class:
- network (between nodes): net_alpha seconds per message step, msg_alpha seconds more per
  message a node sends in that step (its network stack's CPU time: on the testbed every host's
  ranks and stacks share 2 cores; 0 for a NIC that offloads it; msg_share nodes whose stacks
  share the busiest CPU, when a testbed has more hosts than CPUs), net_rate bytes/s per node and
  direction (the NIC or the link), net_eff the fraction of it a transfer gets (calibrated);
- arena (within a node): arena_alpha seconds per synchronisation, copy_rate bytes/s one rank copies
  (the flat algorithms send messages within a node too: net_alpha each, at copy_rate);
- gamma: seconds per element-byte one rank reduces;
- link_burst: bytes a node's link lets through at once before its rate applies (a token bucket,
  as the testbed's rate limiter; 0 for a plain link, as a NIC).
Every rank of a node sends through that node's one link, so a step in which all L ranks of a
node send m bytes across costs net_alpha + L msg_alpha + L m / (net_rate net_eff).

time() is what a call costs when calls follow each other (a training loop, the perf tools):
on a plain link the sum of the steps (each step's transfer after the one before); through a token
bucket the transfers on the critical path pass at once while the bucket holds them, so a call
takes its latency (plus what exceeds the burst, at the rate), but never less than its busiest
link's bytes per direction at the rate, which is all the bucket refills with.

The algorithms follow the code (docs/algorithms.md): the flat ones over all n = H L ranks in rank
order (a node's ranks consecutive, so a ring crosses each node boundary once); hier_split as an
arena reduce-scatter, one cross-node all_reduce of each rank's block (ring above
cross_ring_min_bytes(H), 64 KiB with 2 nodes; recursive doubling below) and an arena all-gather;
hier_direct chunk by chunk (one arena slot), a cross-node recursive doubling per chunk from every
rank; hier_leader the same from one rank per node, with a second arena synchronisation. Each
function returns seconds for one all_reduce of `size` bytes.
Invariant: pure functions of (machine, size); no measurement here.
"""
import math
import sys
from dataclasses import dataclass, replace

from compare_lib.common import busbw_factor

CROSS_RING_BYTES = 64 * 1024   # selector.cc: kCrossRingBytes (crossRingMinBytes with 2 nodes)
DIRECT_MAX_BYTES = 16 * 1024   # selector.cc: hier_leader / arena_direct up to this size
FLAT_RD_MAX_BYTES = 64 * 1024  # selector.cc: recursive doubling up to this size


@dataclass(frozen=True)
class Machine:
    name: str
    nodes: int
    per_node: int
    net_alpha: float
    net_rate: float
    net_eff: float = 1.0
    msg_alpha: float = 0.0
    arena_alpha: float = 2e-6
    copy_rate: float = 8e9
    gamma: float = 1.0 / 8e9
    slot_bytes: int = 1 << 20
    segment_bytes: int = 1 << 20
    link_burst: int = 0
    msg_share: float = 1.0  # nodes whose network stacks share the busiest CPU (a testbed's)

    @property
    def msg_cost(self):
        """CPU seconds per message on the busiest CPU: msg_alpha for each node sharing it."""
        return self.msg_alpha * self.msg_share

    @property
    def ranks(self):
        return self.nodes * self.per_node

    def net_beta(self):
        """Seconds per byte through one node's link (one direction)."""
        return 1.0 / (self.net_rate * self.net_eff)


def _log2(n):
    return math.ceil(math.log2(n)) if n > 1 else 0


def _rd_steps(n):
    """Recursive doubling's message steps on the critical path (fold and unfold when n is not a
    power of two)."""
    p = 1 << int(math.floor(math.log2(n))) if n > 1 else 1
    return _log2(p) + (2 if p != n else 0)


def flat_ring(m, size):
    n = m.ranks
    if n == 1:
        return 0.0
    piece = size / n
    if m.nodes > 1:  # every step: one edge per node boundary, the others within a node
        slowest = max(m.net_beta(), 1.0 / m.copy_rate if m.per_node > 1 else 0.0)
        step = m.net_alpha + m.per_node * m.msg_cost + piece * slowest
    else:
        step = m.arena_alpha + piece / m.copy_rate
    return 2 * (n - 1) * step + (n - 1) / n * size * m.gamma


def flat_recursive_doubling(m, size):
    n = m.ranks
    if n == 1:
        return 0.0
    t = 0.0
    for k in range(_log2(1 << int(math.floor(math.log2(n))))):
        if (1 << k) < m.per_node:  # partner on the same node: a message all the same
            t += m.net_alpha + m.per_node * m.msg_cost + size / m.copy_rate
        else:  # every rank of the node sends the whole buffer across at once
            t += m.net_alpha + m.per_node * (m.msg_cost + size * m.net_beta())
        t += size * m.gamma
    # Fold and unfold (n not a power of two) pair neighbours: on one node when it has >= 2 ranks.
    extra = _rd_steps(n) - _log2(1 << int(math.floor(math.log2(n))))
    if m.per_node > 1:
        return t + extra * (m.net_alpha + m.msg_cost + size / m.copy_rate)
    return t + extra * (m.net_alpha + m.msg_cost + size * m.net_beta())


def cross_ring_min_bytes(h):
    """selector.cc crossRingMinBytes: the cross all_reduce is a ring above this part size."""
    if h <= 2:
        return CROSS_RING_BYTES
    return CROSS_RING_BYTES // 2 * (2 * (h - 1)) // _rd_steps(h)


def _cross(m, part, senders=None):
    """One cross-node all_reduce of `part` bytes per rank, `senders` ranks of a node at once (all
    L by default). A ring moves 2(H-1)/H x part per rank, senders x that through the node's link,
    in segments pipelined behind each other: the per-step latency is paid once per step, not per
    segment."""
    h = m.nodes
    if h == 1 or part == 0:
        return 0.0
    L = m.per_node if senders is None else senders
    if part > cross_ring_min_bytes(h):
        steps = 2 * (h - 1)
        wire = steps * L * part / h * m.net_beta()
        return steps * (m.net_alpha + L * m.msg_cost) + wire + (h - 1) / h * part * m.gamma
    return (_rd_steps(h) * (m.net_alpha + L * (m.msg_cost + part * m.net_beta()))
            + _log2(h) * part * m.gamma)


def _cross_link_bytes(m, part, senders=None):
    """Bytes through a node's link per direction in _cross (the busiest link): recursive doubling
    over H not a power of two folds into and unfolds from log2 H partners, one direction each."""
    h = m.nodes
    if h == 1 or part == 0:
        return 0.0
    L = m.per_node if senders is None else senders
    if part > cross_ring_min_bytes(h):
        return 2 * (h - 1) * L * part / h
    p = 1 << int(math.floor(math.log2(h)))
    return (_log2(p) + (1 if p != h else 0)) * L * part


def hier_split(m, size):
    """Arena reduce-scatter of the whole buffer, one cross all_reduce of each rank's block (a
    pipelined ring), arena all-gather (hierarchical_all_reduce.cc)."""
    L = m.per_node
    block = size / L
    piece = max(1.0, min(m.slot_bytes, m.segment_bytes) / L)  # per block and arena use
    uses_rs = math.ceil(block / piece)
    uses_ag = math.ceil(block / (min(m.slot_bytes // 2, m.segment_bytes)))
    scatter = 2 * uses_rs * m.arena_alpha + size / m.copy_rate + (L - 1) * block * m.gamma
    gather = 2 * uses_ag * m.arena_alpha + (block + size) / m.copy_rate
    return scatter + _cross(m, block) + gather


def hier_direct(m, size):
    L = m.per_node
    chunk = min(m.slot_bytes, m.segment_bytes)
    chunks = max(1, math.ceil(size / chunk))
    each = min(size, chunk)
    local = m.arena_alpha + each / m.copy_rate + (L - 1) * each * m.gamma
    return chunks * (local + _cross(m, each))


def hier_leader(m, size):
    """Per chunk (one arena slot): every rank copies in, the leader reduces, all_reduces the chunk
    with the other nodes' leaders (one sender per node) and copies the result into its slot, the
    others copy it out: two arena synchronisations."""
    L = m.per_node
    chunk = min(m.slot_bytes, m.segment_bytes)
    chunks = max(1, math.ceil(size / chunk))
    each = min(size, chunk)
    local = 2 * m.arena_alpha + 3 * each / m.copy_rate + (L - 1) * each * m.gamma
    return chunks * (local + _cross(m, each, senders=1))


ALGORITHMS = {"ring": flat_ring, "recursive_doubling": flat_recursive_doubling,
              "hier_split": hier_split, "hier_direct": hier_direct, "hier_leader": hier_leader}


def link_bytes(m, name, size):
    """Bytes through the busiest node link per direction in one call of algorithm `name`."""
    if m.nodes == 1:
        return 0.0
    n, L = m.ranks, m.per_node
    if name == "ring":
        return 2 * (n - 1) / n * size
    if name == "recursive_doubling":
        p = 1 << int(math.floor(math.log2(n)))
        across = sum(1 for k in range(_log2(p)) if (1 << k) >= L)
        folds = (_rd_steps(n) - _log2(p)) // 2 if L == 1 else 0
        return (across + folds) * L * size
    if name == "hier_split":
        return _cross_link_bytes(m, size / L)
    senders = 1 if name == "hier_leader" else None
    chunk = min(m.slot_bytes, m.segment_bytes)
    full, rest = divmod(size, chunk)
    return full * _cross_link_bytes(m, chunk, senders) + _cross_link_bytes(m, rest, senders)


def collective(name):
    """The module of a collective's algorithms: this one (all_reduce) or costs_a2a (all_to_all);
    each has ALGORITHMS, link_bytes, applicable and selected."""
    if name == "all_reduce":
        return sys.modules[__name__]
    if name == "all_to_all":
        from model_lib import costs_a2a
        return costs_a2a
    raise ValueError(f"no cost model for {name}")


def parts(m, name, size, kind="all_reduce"):
    """(latency seconds, wire bytes on the critical path, busiest link's bytes per direction) of
    one call: the sum model's time is latency + wire x net_beta."""
    c = collective(kind)
    run = c.ALGORITHMS[name]
    latency = run(replace(m, net_rate=math.inf), size)
    wire = (run(replace(m, net_rate=1.0, net_eff=1.0), size) - latency)
    return latency, wire, c.link_bytes(m, name, size)


def time(m, name, size, kind="all_reduce"):
    """Seconds per call of algorithm `name` on `size` bytes, calls back to back (module doc)."""
    if m.link_burst <= 0 or m.nodes == 1:
        return collective(kind).ALGORITHMS[name](m, size)
    latency, wire, busiest = parts(m, name, size, kind)
    beta = m.net_beta()
    return max(busiest * beta, latency + max(0.0, wire - m.link_burst) * beta)


def applicable(m):
    names = ["ring", "recursive_doubling"]
    if m.nodes > 1 and m.per_node > 1:
        names += ["hier_split", "hier_direct", "hier_leader"]
    return names


def selected(m, size):
    """What smddp's selector runs (selector.cc) on this machine."""
    if m.nodes > 1 and m.per_node > 1:
        return "hier_leader" if size <= DIRECT_MAX_BYTES else "hier_split"
    return "recursive_doubling" if size <= FLAT_RD_MAX_BYTES else "ring"


def best(m, size, kind="all_reduce"):
    """(name, seconds) of the algorithm the model finds fastest."""
    return min(((a, time(m, a, size, kind)) for a in collective(kind).applicable(m)),
               key=lambda x: x[1])


def busbw(m, size, seconds, kind="all_reduce"):
    """Bytes/s, nccl-tests' definition (compare_lib.common)."""
    return size / seconds * busbw_factor(kind, m.ranks) if seconds > 0 else 0.0


def scaled(m, **changes):
    return replace(m, **changes)
