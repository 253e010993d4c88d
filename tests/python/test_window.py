# SPDX-License-Identifier: Apache-2.0
"""torch's one-sided windows on smddp (workers_window.py): every rank puts into every rank,
ordering of puts and signals, map_remote_tensor, refusals, a dead peer named; windows in smddp's
memory (mapped, in place) and in torch's (messages); and across namespace hosts."""
import os
import signal
import subprocess
import sys

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
    tag = f"win{os.getpid() % 10000}"
    hosts = netns_hosts.HOSTS_SH
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "window_worker_env.py")
    try:
        subprocess.run([hosts, "up", tag, "2"], check=True, timeout=30, capture_output=True)
        procs = [subprocess.Popen(
            [hosts, "exec", tag, host, sys.executable, "-m", "torch.distributed.run",
             "--nnodes=2", "--nproc_per_node=2", f"--node_rank={i}",
             "--master_addr=192.0.2.101", "--master_port=29547", worker],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
            for i, host in enumerate("ab")]
        outs = []
        for p in procs:
            try:
                outs.append(p.communicate(timeout=240)[0])
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                outs.append(p.communicate()[0] + "\n(timed out)")
    finally:
        subprocess.run([hosts, "down", tag], timeout=60, capture_output=True)
    for p, out in zip(procs, outs):
        assert p.returncode == 0, out[-4000:]
    assert "".join(outs).count("window suite passed on rank") == 4, "".join(outs)[-4000:]
