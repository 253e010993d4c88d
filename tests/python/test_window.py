# SPDX-License-Identifier: Apache-2.0
"""torch's one-sided windows on smddp (workers_window.py): every rank puts into every rank,
ordering of puts and signals, map_remote_tensor, refusals, a dead peer named; windows in smddp's
memory (mapped, in place) and in torch's (messages); and across namespace hosts."""
import os

import pytest
import torch

import harness
import netns_hosts
import workers_window

pytestmark = pytest.mark.skipif(
    not hasattr(torch.distributed, "_new_window"),
    reason="this torch has no one-sided windows (torch >= 2.15)")


@pytest.mark.parametrize("alloc", [True, False], ids=["allocated", "ordinary"])
@pytest.mark.parametrize("world", [1, 2, 3, 5])
def test_every_rank_puts_into_every_rank(world, alloc):
    harness.run(workers_window.puts, world, init="tcp", timeout=120, args=(alloc, 1000))


@pytest.mark.parametrize("alloc", [True, False], ids=["allocated", "ordinary"])
def test_sixteen_mib_puts(alloc):
    harness.run(workers_window.puts, 2, init="tcp", timeout=120, args=(alloc, 8 << 20))


@pytest.mark.parametrize("alloc", [True, False], ids=["allocated", "ordinary"])
def test_puts_before_a_signal_are_seen_after_the_wait(alloc):
    harness.run(workers_window.ordering, 2, init="tcp", timeout=120, args=(alloc,))


@pytest.mark.parametrize("alloc", [True, False], ids=["allocated", "ordinary"])
def test_a_dead_peer_is_named(alloc):
    world, victim = 2, 1
    with pytest.raises(AssertionError) as failure:
        harness.run(workers_window.dead_peer, world, init="tcp", timeout=90, args=(alloc, victim))
    report = str(failure.value)
    assert f"ranks [{victim}] of {world} did not finish" in report, report
    assert "failed:" not in report, report


@pytest.mark.skipif(netns_hosts.skip_reason() is not None, reason=str(netns_hosts.skip_reason()))
def test_windows_across_namespace_hosts():
    """2 namespace hosts x 2 ranks under torchrun: puts into every rank (mapped within a host,
    messages between hosts), windows in torch's memory, ordering across the hosts."""
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "window_worker_env.py")
    runs = netns_hosts.torchrun_on_hosts(f"win{os.getpid() % 10000}", [worker], 29547)
    for code, out in runs:
        assert code == 0, out[-4000:]
    assert "".join(out for _, out in runs).count("window suite passed on rank") == 4, \
        "".join(out for _, out in runs)[-4000:]
