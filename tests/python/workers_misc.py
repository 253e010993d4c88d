# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_errors.py, test_groups.py and test_spin.py: clear RuntimeErrors for
everything smddp does not do, bounded waits, several (overlapping) groups in one job, and the
automatic spin under affinity masks.
Invariant: every rank issues the same collectives in the same order on each group it belongs to.
"""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist


def expect_error(rank, what, fn, *needles):
    try:
        fn()
    except RuntimeError as e:
        msg = str(e)
        for needle in needles:
            assert needle in msg, f"rank {rank}: {what}: {needle!r} not in error: {msg}"
        return msg
    raise AssertionError(f"rank {rank}: {what} did not raise RuntimeError")


def errors(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    import torch_smddp

    pg = torch_smddp.backend_of()
    assert abs(pg.timeout_seconds - 30) < 1e-6, pg.timeout_seconds
    expect_error(rank, "BAND on float32", lambda: dist.all_reduce(torch.ones(3),
                                                                  op=dist.ReduceOp.BAND), "smddp")
    expect_error(rank, "bits8", lambda: dist.broadcast(
        torch.empty(3, dtype=getattr(torch, "bits8", torch.complex32)), 0), "smddp", "dtype")
    z = torch.full((3,), complex(rank, -rank), dtype=torch.cfloat)
    dist.broadcast(z, 0)
    assert z.tolist() == [0j] * 3, f"rank {rank}: complex broadcast: {z.tolist()}"
    expect_error(rank, "sparse MAX", lambda: dist.all_reduce(torch.ones(3).to_sparse(),
                                                             op=dist.ReduceOp.MAX), "smddp")
    expect_error(rank, "allgather sizes",
                 lambda: dist.all_gather([torch.zeros(5) for _ in range(world)], torch.ones(4)),
                 "smddp", "allgather")
    expect_error(rank, "all_to_all_single splits",
                 lambda: dist.all_to_all_single(torch.zeros(4 * world), torch.ones(4 * world),
                                                [4] * world, [4] * (world - 1) + [3]),
                 "smddp", "split sizes add up to")
    expect_error(rank, "all_to_all_single even",
                 lambda: dist.all_to_all_single(torch.zeros(4 * world),
                                                torch.ones(5 * world)),
                 "smddp", "all_to_all_single", "must have one size")
    expect_error(rank, "reduce_scatter_tensor size",
                 lambda: dist.reduce_scatter_tensor(torch.zeros(4), torch.ones(4 * world + 1)),
                 "smddp", "reduce_scatter_tensor")
    expect_error(rank, "reduce_scatter list length",
                 lambda: dist.reduce_scatter(torch.zeros(4), [torch.ones(4)] * (world + 1)),
                 "smddp", "world_size")
    expect_error(rank, "all_gather_into_tensor size",
                 lambda: dist.all_gather_into_tensor(torch.zeros(4 * world + 1), torch.ones(4)),
                 "smddp")
    # a reduction the dtype does not define (bool has no average), named with the reason
    expect_error(rank, "AVG bool", lambda: dist.all_reduce(torch.ones(3, dtype=torch.bool),
                                                           op=dist.ReduceOp.AVG), "average")
    # the group is still usable after all of the above
    t = torch.full((3,), float(rank))
    dist.all_reduce(t)
    assert t.tolist() == [world * (world - 1) / 2] * 3, f"rank {rank}: {t}"
    if world > 1:
        bounded_wait(rank, world)
    dist.destroy_process_group()


def bounded_wait(rank, world):
    # rank 0 starts an all_reduce that the others join 3 s later: a 0.5 s wait must time out
    # promptly with a RuntimeError, and a later wait without timeout must succeed.
    t = torch.ones(8)
    if rank == 0:
        work = dist.all_reduce(t, async_op=True)
        start = time.monotonic()
        expect_error(rank, "wait(0.5s)", lambda: work.wait(timeout=timedelta(seconds=0.5)))
        took = time.monotonic() - start
        assert took < 2.5, f"rank 0: wait(0.5 s) took {took:.1f} s"
        assert not work.is_completed()
        work.wait()
    else:
        time.sleep(3)
        dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 8, f"rank {rank}: {t}"


def groups(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    ranks_a = list(range(0, world - 1))  # e.g. [0, 1, 2]
    ranks_b = list(range(1, world))      # e.g. [1, 2, 3]
    group_a = dist.new_group(ranks_a)
    group_b = dist.new_group(ranks_b)
    whole = dist.new_group(list(range(world)))
    for step in range(100):
        for ranks, group in ((ranks_a, group_a), (ranks_b, group_b)):
            if rank not in ranks:
                continue
            t = torch.full((5,), float(rank + step))
            if step % 3 == 0:
                dist.all_reduce(t, group=group)
                want = [float(sum(r + step for r in ranks))] * 5
            elif step % 3 == 1:
                dist.broadcast(t, src=ranks[-1], group=group)
                want = [float(ranks[-1] + step)] * 5
            else:
                outs = [torch.zeros(5) for _ in ranks]
                dist.all_gather(outs, t, group=group)
                t = torch.stack(outs)[:, 0]
                want = [float(r + step) for r in ranks]
            assert t.tolist() == want, f"rank {rank} step {step} group {ranks}: {t} != {want}"
        if step % 25 == 0:
            t = torch.ones(2)
            dist.all_reduce(t, group=whole)
            assert t.tolist() == [float(world)] * 2
    dist.barrier()
    dist.destroy_process_group()


def spin_under_affinity(rank, world, init_method, masks, expected):
    """Pins this rank to masks[rank] (None: as started), then checks the spin the group chose."""
    if masks is not None:
        os.sched_setaffinity(0, masks[rank])
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    import torch_smddp

    spin = torch_smddp.backend_of().spin_us
    assert spin == expected, (f"rank {rank} of {world}, CPUs {sorted(os.sched_getaffinity(0))}: "
                              f"spin {spin} us, expected {expected}")
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    assert t.tolist() == [world * (world + 1) / 2] * 5, f"rank {rank}: {t.tolist()}"
    dist.destroy_process_group()
