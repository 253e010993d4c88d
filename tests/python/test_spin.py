# SPDX-License-Identifier: Apache-2.0
"""The automatic spin through torch: a host's ranks spin (20 us) only while they have a CPU each,
counted from the union of their affinity masks (taskset, cpusets) and not the machine's cores;
SMDDP_SPIN_US overrides. The group's choice is read back from backend_of(group).spin_us.
"""
import os

import pytest

import harness
import workers_misc

CPUS = sorted(os.sched_getaffinity(0))


def cases():
    yield pytest.param(2, [{CPUS[0]}, {CPUS[0]}], 0, id="two-ranks-one-cpu")
    if len(CPUS) >= 2:
        yield pytest.param(2, [{CPUS[0]}, {CPUS[1]}], 20, id="two-ranks-a-cpu-each")
        yield pytest.param(3, [{CPUS[0]}, {CPUS[1]}, {CPUS[0], CPUS[1]}], 0,
                           id="three-ranks-two-cpus")
    if len(CPUS) <= 4:
        yield pytest.param(len(CPUS) + 1, None, 0, id="more-ranks-than-allowed-cpus")
        yield pytest.param(len(CPUS), None, 20, id="a-cpu-per-rank")


@pytest.mark.parametrize("world,masks,expected", list(cases()))
def test_spin_follows_the_cpus_the_ranks_may_use(world, masks, expected, monkeypatch):
    monkeypatch.delenv("SMDDP_SPIN_US", raising=False)
    harness.run(workers_misc.spin_under_affinity, world, timeout=60, args=(masks, expected))


def test_spin_us_overrides(monkeypatch):
    monkeypatch.setenv("SMDDP_SPIN_US", "7")
    harness.run(workers_misc.spin_under_affinity, 2, timeout=60,
                args=([{CPUS[0]}, {CPUS[0]}], 7))
