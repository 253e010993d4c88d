# SPDX-License-Identifier: Apache-2.0
"""Straggler detection through torch (smddp/straggler.h, backend_of(group).straggler_report()):
a rank that sleeps 20 ms before each all_reduce is named by rank 0 within 100 calls, with a WARN
line, on one host (3 ranks) and on 2 namespace hosts x 2 ranks; no other rank is ever named, and a
job whose ranks are alike names nobody. straggler_job.py makes the calls and checks each report.
Invariant: every job is bounded (harness timeout, torchrun_on_hosts timeout).
"""
import os

import pytest

import harness
import netns_hosts
import straggler_job

JOB = os.path.join(os.path.dirname(os.path.abspath(__file__)), "straggler_job.py")


def test_a_sleeping_rank_is_named_on_one_host():
    harness.run(straggler_job.run_rank, 3, init="tcp", timeout=120, args=(2, 150))


def test_alike_ranks_name_nobody():
    harness.run(straggler_job.run_rank, 3, init="file", timeout=120, args=(-1, 300))


@pytest.mark.skipif(netns_hosts.skip_reason() is not None, reason=str(netns_hosts.skip_reason()))
def test_a_sleeping_rank_is_named_across_namespace_hosts():
    runs = netns_hosts.torchrun_on_hosts(f"stg{os.getpid() % 10000}", [JOB, "3", "150"], 29561,
                                         timeout=180)
    for code, out in runs:
        assert code == 0, out[-4000:]
    text = "".join(out for _, out in runs)
    assert text.count("straggler job passed on rank") == 4, text[-4000:]
    # Rank 0 (host a) warns about rank 3 (host b).
    assert "straggler: rank 3 (" in runs[0][1], runs[0][1][-4000:]
    assert "after the median in" in runs[0][1] and "all_reduce calls" in runs[0][1]
