# SPDX-License-Identifier: Apache-2.0
"""Rank bodies of test_nccl_plane.py: what is particular to the NCCL plane through torch (the
plane each group reports, send/recv on NCCL's pair communicators, a lost or stopped peer named
within 2 s). The suites it shares with the other planes (collectives, dtypes, DDP, FSDP2,
shrink, reconfigure) are the usual workers, run by the test under the plane's environment.
Invariant: every rank of a group issues the same calls in the same order, except the victim of a
fault test, which leaves at a point every rank knows.
"""
import os
import signal
import subprocess
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_smddp
import workers_p2p
from workers_faults import check_usable, expect_raise


def _init(rank, world, init_method, timeout_s=60):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=timeout_s))


def planes(rank, world, init_method, want, needle):
    """The world group and a subgroup of it report `want` as their plane, with a reason holding
    `needle`, and reduce right on it."""
    _init(rank, world, init_method)
    pg = torch_smddp.backend_of()
    assert pg.data_plane == want, f"rank {rank}: plane {pg.data_plane}: {pg.data_plane_reason}"
    assert needle in pg.data_plane_reason, f"rank {rank}: {needle!r} not in {pg.data_plane_reason}"
    check_usable(rank, world, "the plane's first all_reduce")
    members = list(range(0, world, 2))
    sub = dist.new_group(members)
    if rank in members:
        assert torch_smddp.backend_of(sub).data_plane == want
        t = torch.full((7,), float(rank))
        dist.all_reduce(t, group=sub)
        assert t.tolist() == [float(sum(members))] * 7, f"rank {rank}: subgroup: {t.tolist()}"
    dist.barrier()
    dist.destroy_process_group()


def messages(rank, world, init_method):
    """send/recv on NCCL's pair communicators: rings, batches, objects; a recv from any source
    (which NCCL cannot match) is refused at once, naming the remedy, and the group goes on."""
    _init(rank, world, init_method)
    assert torch_smddp.backend_of().data_plane == "nccl"
    workers_p2p.check_ring(rank, world)
    workers_p2p.check_batch(rank, world)
    workers_p2p.check_objects(rank, world)
    expect_raise(rank, "recv from any source", lambda: dist.recv(torch.zeros(2)),
                 "any source", "NCCL plane", "name the source")
    check_usable(rank, world, "the refused recv")
    dist.destroy_process_group()


def lost_peer(rank, world, init_method, victim, how, at):
    """`victim` leaves (`how`: SIGKILL, os._exit or SIGSTOP) inside a stream of all_reduces; every
    survivor's pending collective fails within 2 s of the last success, naming the victim; the
    group then says it is broken and shuts down promptly. The PG timeout is 60 s."""
    _init(rank, world, init_method, timeout_s=60)
    t = torch.ones(4096)
    last_ok = time.monotonic()
    for i in range(100000):
        if rank == victim and i == at:
            if how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif how == "exit":
                os._exit(3)
            else:  # killed 8 s later, so that the harness need not wait for its timeout
                subprocess.Popen(["sh", "-c", f"sleep 8; kill -9 {os.getpid()}"])
                os.kill(os.getpid(), signal.SIGSTOP)
        try:
            dist.all_reduce(t)
        except RuntimeError as e:
            took, msg = time.monotonic() - last_ok, str(e)
            assert i >= at, f"rank {rank}: failed at {i} before rank {victim} left: {msg}"
            assert took < 2.0, f"rank {rank}: raised {took:.2f} s after the last success: {msg}"
            assert "smddp" in msg and f"rank {victim}" in msg, f"rank {rank}: {msg}"
            print(f"rank {rank}: {how}: raised {took:.2f} s after the last success: {msg}",
                  flush=True)
            break
        assert t[0].item() == world, f"rank {rank}: all_reduce {i}: {t[0].item()}"
        t.fill_(1.0)
        last_ok = time.monotonic()
    else:
        raise AssertionError(f"rank {rank}: the all_reduces went on after rank {victim} left")
    expect_raise(rank, "a collective on the broken group", lambda: dist.barrier(), "broken")
    start = time.monotonic()
    dist.destroy_process_group()
    took = time.monotonic() - start
    assert took < 10, f"rank {rank}: destroy_process_group of a broken group took {took:.1f} s"


def mismatch(rank, world, init_method, kind):
    """Ranks disagree on one collective (`kind`: size, dtype, collective). The signatures travel
    out of band, so a rank whose NCCL call happened to complete learns of it at its next call;
    every rank must raise within seconds (PG timeout 5 s) naming the mismatch and both calls, and
    the group stays broken."""
    _init(rank, world, init_method, timeout_s=5)
    check_usable(rank, world, "init")
    if kind == "size":
        fn = lambda: dist.all_reduce(torch.ones(10 if rank == 0 else 20))  # noqa: E731
    elif kind == "dtype":
        fn = lambda: dist.all_reduce(torch.ones(8, dtype=torch.float32 if rank == 0  # noqa: E731
                                                else torch.float64))
    else:
        fn = (lambda: dist.all_reduce(torch.ones(8))) if rank == 0 else (  # noqa: E731
            lambda: dist.broadcast(torch.ones(8), 0))
    start = time.monotonic()
    try:
        fn()
        msg = expect_raise(rank, f"the call after a {kind} mismatch",
                           lambda: dist.all_reduce(torch.ones(4)), "mismatch", bound_s=20.0)
    except RuntimeError as e:
        msg = str(e)
    took = time.monotonic() - start
    assert took < 20, f"rank {rank}: the {kind} mismatch was named only after {took:.1f} s"
    assert "mismatch" in msg and "rank 0 called all_reduce" in msg, f"rank {rank}: {msg}"
    print(f"rank {rank}: {kind} mismatch named after {took:.2f} s: {msg}", flush=True)
    expect_raise(rank, "a collective on the broken group", lambda: dist.barrier(), "broken",
                 bound_s=20.0)
    dist.destroy_process_group()


def shrink_without_loss(rank, world, init_method):
    """SHRINK_DEFAULT with nobody lost: the shrunk group's NCCL communicator is derived from the
    parent's (ncclCommShrink), and reduces right."""
    _init(rank, world, init_method)
    check_usable(rank, world, "before the shrink")
    pg = torch_smddp.backend_of()
    assert pg.nccl_formed_by == "ncclCommInitRankConfig", pg.nccl_formed_by
    if rank == world - 1:
        dist.destroy_process_group()
        return
    group = dist.shrink_group([world - 1])
    t = torch.full((9,), float(rank + 1))
    dist.all_reduce(t, group=group)
    want = float(sum(range(1, world)))
    assert t.tolist() == [want] * 9, f"rank {rank}: shrunk group: {t.tolist()}"
    formed = torch_smddp.backend_of(group).nccl_formed_by
    assert formed == "ncclCommShrink", f"rank {rank}: shrunk group's communicator: {formed}"
    dist.destroy_process_group()
