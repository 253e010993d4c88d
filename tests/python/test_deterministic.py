# SPDX-License-Identifier: Apache-2.0
"""SMDDP_DETERMINISTIC=1 through torch (determinism_job.py checks each result against the rank-order
reduction, bit for bit): every SMDDP_ALGO name of all_reduce, reduce_scatter and reduce, the arena
on and off, on 4 ranks of one host, and on 2 namespace hosts x 2 ranks, all give the same digest;
without the mode the ring's float32 all_reduce differs from the rank order (the check can fail).
Invariant: every job is bounded (harness and torchrun_on_hosts timeouts).
"""
import os
import re

import pytest

import determinism_job
import harness
import netns_hosts

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "determinism_job.py")
WORLD = 4
# Every name SMDDP_ALGO accepts for the three reductions (src/algorithms/tables.cc).
ALGOS = {
    "allreduce": ["recursive_doubling", "ring", "hier_direct", "hier_leader", "hier_split",
                  "arena_direct", "arena_split", "pooled", "fixed_order"],
    "reduce_scatter": ["hier_leader", "hier", "pooled", "ring", "arena", "fixed_order"],
    "reduce": ["hier", "binomial", "arena", "fixed_order"],
}


def _settings():
    """SMDDP_ALGO values covering every name of every reduction (the i-th of each list), each
    with the arena on and off."""
    longest = max(len(v) for v in ALGOS.values())
    out = []
    for i in range(longest):
        algo = ";".join(f"{k}:{v[i % len(v)]}" for k, v in ALGOS.items())
        out += [(algo, "1"), (algo, "0")]
    return out


@pytest.mark.parametrize("algo,arena", _settings())
def test_every_algorithm_and_arena_setting_reduces_in_rank_order(monkeypatch, algo, arena):
    monkeypatch.setenv("SMDDP_DETERMINISTIC", "1")
    monkeypatch.setenv("SMDDP_ALGO", algo)
    monkeypatch.setenv("SMDDP_ARENA", arena)
    harness.run(determinism_job.run_rank, WORLD, init="file", timeout=240)


def test_without_the_mode_the_order_is_the_algorithms(monkeypatch):
    monkeypatch.delenv("SMDDP_DETERMINISTIC", raising=False)
    monkeypatch.setenv("SMDDP_ALGO", "allreduce:ring")
    monkeypatch.setenv("SMDDP_ARENA", "0")
    harness.run(determinism_job.run_rank, WORLD, init="file", timeout=240, args=(True,))


@pytest.mark.skipif(netns_hosts.skip_reason() is not None, reason=str(netns_hosts.skip_reason()))
def test_two_hosts_of_two_give_the_same_bits_as_one_host_of_four(tmp_path):
    env = dict(os.environ, SMDDP_DETERMINISTIC="1")
    runs = netns_hosts.torchrun_on_hosts(f"det{os.getpid() % 10000}", [JOB], 29563, env=env,
                                         timeout=300)
    for code, out in runs:
        assert code == 0, out[-4000:]
    hosts = re.findall(r"determinism digest (\w+)", runs[0][1])
    assert len(hosts) == 1, runs[0][1][-3000:]
    # The one-host digest: the same job on 4 ranks here (rank 0 prints it).
    os.environ["SMDDP_DETERMINISTIC"] = "1"
    try:
        harness.run(determinism_job.run_rank, WORLD, init="file", timeout=240,
                    args=(False, str(tmp_path / "digest")))
    finally:
        del os.environ["SMDDP_DETERMINISTIC"]
    one = (tmp_path / "digest").read_text()
    assert [one] == hosts, (one, hosts)
