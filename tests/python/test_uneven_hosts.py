# SPDX-License-Identifier: Apache-2.0
"""The engine on hosts with different numbers of ranks: 3 namespace hosts (tests/netns/hosts.sh)
with 3, 2 and 1 ranks, through the C++ perf tools (no torch). Every host gets its arena; all_reduce
and every other collective run a form with one rank per host on the network where it was
measured faster (hier_leader; barrier, reduce, gather and scatter hier; selector.cc says where),
asserted from the log; every dtype, op
and root on exact values equals the closed form bit for bit (#wrong 0 on every row), as the flat
path (SMDDP_ARENA=0) does.
Invariant: bounded (every process has a deadline; its process group is killed past it) and clean
(the namespaces are deleted in a finally).
"""
import os
import re
import subprocess
import time

import pytest

import netns_hosts
from test_multihost import BENCH, HOSTS_SH, logs, wait_all, wrong_counts

HOST_OF_RANK = ["a", "a", "a", "b", "b", "c"]  # 3 + 2 + 1
ADDR = {"a": "192.0.2.101", "b": "192.0.2.102", "c": "192.0.2.103"}

pytestmark = pytest.mark.skipif(
    netns_hosts.skip_reason() is not None or not os.path.exists(os.path.join(BENCH,
                                                                             "all_reduce_perf")),
    reason=str(netns_hosts.skip_reason() or f"perf tools not built in {BENCH}"))


@pytest.fixture(scope="module")
def hosts():
    tag = f"uh{os.getpid() % 100000}"
    try:
        subprocess.run([HOSTS_SH, "up", tag, "3"], check=True, timeout=30, capture_output=True)
        yield tag
    finally:
        subprocess.run([HOSTS_SH, "down", tag], timeout=60, capture_output=True)


def run_tool(tag, tool, args, port, tmp_path, extra_env):
    n = len(HOST_OF_RANK)
    ranks = []
    for rank, host in enumerate(HOST_OF_RANK):
        env = dict(os.environ, SMDDP_RANK=str(rank), SMDDP_WORLD_SIZE=str(n),
                   SMDDP_STORE=f"tcp:{ADDR['a']}:{port}", SMDDP_FABRIC_ADDR=ADDR[host],
                   SMDDP_TIMEOUT_MS="30000", SMDDP_DEBUG="INFO", **extra_env)
        log = tmp_path / f"{tool}.{port}.rank{rank}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen([HOSTS_SH, "exec", tag, host, os.path.join(BENCH, tool)] + args,
                                    env=env, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        ranks.append((proc, log))
    codes = wait_all(ranks, time.monotonic() + 150)
    out = [text for _, text in sorted(logs(ranks).items())]
    for r, code in enumerate(codes):
        assert code == 0, f"{tool} rank {r} on node{HOST_OF_RANK[r]}: exit {code}\n{out[r][-3000:]}"
    return out


@pytest.mark.parametrize("mode", ["hierarchical", "flat"])
def test_all_reduce_exact_on_three_two_and_one_ranks(hosts, tmp_path, mode):
    args = ["-b", "8", "-e", "1M", "-f", "8", "-n", "2", "-w", "1", "-c", "1", "-o", "all",
            "-d", "all"]
    extra = {} if mode == "hierarchical" else {"SMDDP_ARENA": "0"}
    out = run_tool(hosts, "all_reduce_perf", args, 29720 + (mode == "flat"), tmp_path, extra)
    counts = wrong_counts(out[0])
    assert len(counts) == 432 and set(counts) == {0}, f"#wrong {counts}\n{out[0][-3000:]}"
    chosen = set(re.findall(r"\ball_reduce uses algorithm (\w+)", "\n".join(out)))
    if mode == "hierarchical":
        assert chosen == {"hier_leader"}, chosen
        assert "an arena per host (hierarchical)" in out[0], out[0][-3000:]
    else:
        assert chosen <= {"recursive_doubling", "ring"} and chosen, chosen


# tool: (its flags, the collective, the algorithms it must choose on 3 + 2 + 1 ranks from 8 B to
# 256 KiB: broadcast the flat tree to 16 KiB; all_gather and reduce_scatter the flat ring from
# 128 KiB, all_to_all pairwise from 64 KiB over all ranks).
LEADER_FORMS = {
    "broadcast_perf": (["-r", "-1", "-d", "all"], "broadcast", {"binomial", "hier_leader"}),
    "all_gather_perf": (["-d", "all"], "all_gather", {"hier_leader", "ring"}),
    "reduce_scatter_perf": (["-o", "all", "-d", "all"], "reduce_scatter", {"hier_leader", "ring"}),
    "alltoall_perf": (["-d", "all"], "all_to_all", {"hier_leader", "pairwise"}),
    "reduce_perf": (["-r", "-1", "-o", "all", "-d", "all"], "reduce", {"hier"}),
    "gather_perf": (["-r", "-1", "-d", "all"], "gather", {"hier"}),
    "scatter_perf": (["-r", "-1", "-d", "all"], "scatter", {"hier"}),
}


@pytest.mark.parametrize("tool", list(LEADER_FORMS))
def test_every_collective_takes_a_leader_form(hosts, tmp_path, tool):
    """8 B to 256 KiB, every dtype (and op, and root): #wrong 0 is the closed form bit for bit,
    which the flat path also gives; the log names the forms chosen."""
    flags, collective, forms = LEADER_FORMS[tool]
    args = ["-b", "8", "-e", "256K", "-f", "8", "-n", "2", "-w", "1", "-c", "1"] + flags
    out = run_tool(hosts, tool, args, 29730 + 2 * list(LEADER_FORMS).index(tool), tmp_path, {})
    counts = wrong_counts(out[0])
    assert len(counts) >= 6 and set(counts) == {0}, f"#wrong {counts}\n{out[0][-3000:]}"
    chosen = set(re.findall(r"\b" + collective + r" uses algorithm (\w+)", "\n".join(out)))
    assert chosen == forms, chosen


def test_barrier(hosts, tmp_path):
    out = run_tool(hosts, "barrier_perf", ["-n", "20", "-w", "2"], 29724, tmp_path, {})
    assert "barrier uses algorithm hier" in "\n".join(out), out[0][-3000:]
