# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_torch2.py: the torch 2.x Backend API through torch.distributed, with
closed-form expected values (the rank r contributes r or r + 1, so sums are triangle numbers).
Invariant: every rank issues the same collectives in the same order on each group it belongs to.
"""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_smddp


def tri(ranks):
    """The sum of (r + 1) over `ranks`."""
    return float(sum(r + 1 for r in ranks))


def check(rank, what, got, want):
    assert got == want, f"rank {rank}: {what}: got {got}, want {want}"


def reduce_on(rank, group, members, what):
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t, group=group)
    check(rank, what, t.tolist(), [tri(members)] * 5)


def split_groups(rank, world):
    """split_group: two halves, then a split that leaves some ranks out."""
    halves = [list(range(0, world // 2)), list(range(world // 2, world))]
    mine = halves[0] if rank in halves[0] else halves[1]
    sub = dist.split_group(split_ranks=halves)
    check(rank, "split rank", dist.get_rank(sub), mine.index(rank))
    check(rank, "split size", dist.get_world_size(sub), len(mine))
    reduce_on(rank, sub, mine, "split_group all_reduce")
    evens = [r for r in range(world) if r % 2 == 0]
    only_evens = dist.split_group(split_ranks=[evens])
    if rank in evens:
        reduce_on(rank, only_evens, evens, "split_group(evens) all_reduce")
    else:
        assert only_evens == dist.GroupMember.NON_GROUP_MEMBER, f"rank {rank}: {only_evens}"


def capabilities(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    backend = torch_smddp.backend_of()
    check(rank, "get_backend", dist.get_backend(), "smddp")
    check(rank, "Backend.name()", backend.name(), "smddp")
    assert backend.supports_splitting and backend.supports_coalescing
    if hasattr(dist, "set_timeout"):  # torch >= 2.15; 2.11's split_group needs an accelerator
        split_groups(rank, world)        # device bound to the default group (device_id=)
    # new_group: members only, in the order the world gives them
    tail = list(range(1, world))
    group = dist.new_group(tail)
    if rank in tail:
        reduce_on(rank, group, tail, "new_group all_reduce")
    reduce_on(rank, None, list(range(world)), "world all_reduce after subgroups")
    # object collectives
    objs = [None] * world
    dist.all_gather_object(objs, {"rank": rank, "payload": "x" * rank})
    check(rank, "all_gather_object", objs, [{"rank": r, "payload": "x" * r} for r in range(world)])
    lst = [{"from": rank}, rank * 3] if rank == 1 else [None, None]
    dist.broadcast_object_list(lst, src=1)
    check(rank, "broadcast_object_list", lst, [{"from": 1}, 3])
    # smddp records itself: torch (>= 2.15) attached no FlightRecorderHook to any of these groups
    # (world, splits, new_group)
    self_recording = getattr(dist.distributed_c10d, "_FR_SELF_RECORDING_BACKENDS", set())
    assert not hasattr(dist.distributed_c10d, "_FR_SELF_RECORDING_BACKENDS") or \
        "smddp" in self_recording, f"rank {rank}: smddp not declared self-recording"
    hooks = getattr(dist.distributed_c10d._world, "pg_flight_recorder_hooks", {})
    check(rank, "torch's flight-recorder hooks on smddp groups", len(hooks), 0)
    dist.destroy_process_group()


def coalescing(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    everyone = list(range(world))
    cpu = torch.device("cpu")
    # device=None: torch folds the ops into one allreduce_coalesced / all_gather_single_coalesced
    # call; device=cpu: it also brackets them with the backend's start/endCoalescing
    for device in (None, cpu):
        for async_ops in (True, False):
            ts = [torch.full((4 + i,), float(rank + 1) * (i + 1)) for i in range(3)]
            with dist._coalescing_manager(device=device, async_ops=async_ops) as cm:
                for t in ts:
                    dist.all_reduce(t)
            if async_ops:
                cm.wait()
            for i, t in enumerate(ts):
                check(rank, f"coalesced all_reduce {i} ({device}, async {async_ops})",
                      t.tolist(), [tri(everyone) * (i + 1)] * (4 + i))
            outs = [torch.zeros(3 * world) for _ in range(2)]
            ins = [torch.full((3,), float(10 * rank + i)) for i in range(2)]
            with dist._coalescing_manager(device=device, async_ops=async_ops) as cm:
                for o, i in zip(outs, ins):
                    dist.all_gather_into_tensor(o, i)
            if async_ops:
                cm.wait()
            for i, o in enumerate(outs):
                want = [float(10 * r + i) for r in range(world) for _ in range(3)]
                check(rank, f"coalesced all_gather_into_tensor {i} ({device})", o.tolist(), want)
            # reduce_scatter_tensor_coalesced (FSDP2's gradient reduction): block b of rank r's
            # input i holds 10 * r + b + i
            outs = [torch.full((3,), -1.0) for _ in range(2)]
            ins = [torch.tensor([float(10 * rank + b + i) for b in range(world) for _ in range(3)])
                   for i in range(2)]
            with dist._coalescing_manager(device=device, async_ops=async_ops) as cm:
                for o, i in zip(outs, ins):
                    dist.reduce_scatter_tensor(o, i)
            if async_ops:
                cm.wait()
            for i, o in enumerate(outs):
                want = [float(sum(10 * r + rank + i for r in range(world)))] * 3
                check(rank, f"coalesced reduce_scatter_tensor {i} ({device})", o.tolist(), want)
    # ops torch does not fold (broadcast) run between start and end, in order; the end's Work
    # covers them, and its Future yields their outputs
    bs = [torch.full((2,), float(rank)) for _ in range(2)]
    with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
        for j, b in enumerate(bs):
            dist.broadcast(b, src=(world - 1 - j) % world)
    cm.wait()
    for j, b in enumerate(bs):
        check(rank, f"broadcast {j} inside coalescing", b.tolist(),
              [float((world - 1 - j) % world)] * 2)
    backend = torch_smddp.backend_of()
    backend._start_coalescing()
    b = torch.full((3,), float(rank))
    dist.broadcast(b, src=0)
    work = backend._end_coalescing()
    got = work.get_future().wait()
    check(rank, "end_coalescing Future", [t.tolist() for t in got], [[0.0] * 3])
    # a block left by an exception: the next block starts afresh and works
    try:
        with dist._coalescing_manager(device=cpu, async_ops=True):
            dist.broadcast(torch.ones(1), src=0)
            raise KeyError("left inside the block")
    except KeyError:
        pass
    dist.distributed_c10d._world.pg_coalesce_state.pop(dist.group.WORLD, None)
    t = torch.full((2,), float(rank + 1))
    with dist._coalescing_manager(device=cpu, async_ops=True) as cm:
        dist.all_reduce(t)
    cm.wait()
    check(rank, "coalescing after an abandoned block", t.tolist(), [tri(everyone)] * 2)
    # the functional collective DTensor uses: a one-element all_gather_into_tensor_coalesced
    import torch.distributed._functional_collectives as funcol

    got = funcol.all_gather_tensor(torch.full((2,), float(rank)), 0, dist.group.WORLD)
    got = funcol.wait_tensor(got) if hasattr(funcol, "wait_tensor") else got
    check(rank, "funcol all_gather_tensor", got.tolist(),
          [float(r) for r in range(world) for _ in range(2)])
    dist.destroy_process_group()


def timeout_and_timing(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    # timing: Works of a group with timing on report a duration; without, a clear error
    plain = dist.new_group(list(range(world)))
    timed = dist.new_group(list(range(world)))
    timed._enable_collectives_timing()
    w = dist.all_reduce(torch.ones(1000), group=timed, async_op=True)
    w.wait()
    ms = w._get_duration()
    assert 0 < ms < 60000, f"rank {rank}: duration {ms} ms"
    w = dist.all_reduce(torch.ones(10), group=plain, async_op=True)
    w.wait()
    try:
        w._get_duration()
        raise AssertionError(f"rank {rank}: duration without timing did not raise")
    except RuntimeError as e:
        assert "enableCollectivesTiming" in str(e), str(e)
    # block_current_stream on CPU tensors: the host waits; the result is there afterwards
    t = torch.full((8,), float(rank + 1))
    w = dist.all_reduce(t, async_op=True)
    w.block_current_stream()
    check(rank, "after block_current_stream", t.tolist(), [tri(range(world))] * 8)
    # set_timeout bounds what follows: rank 1 joins 6 s late, rank 0 gives up after ~1 s
    pair = dist.new_group([0, 1])
    if rank in (0, 1):
        if hasattr(dist, "set_timeout"):  # torch >= 2.15 forwards it to every backend
            dist.set_timeout(timedelta(seconds=1), pair)
        else:  # 2.11's _set_pg_timeout reaches gloo and nccl only: the Backend's own method
            torch_smddp.backend_of(pair).set_timeout(timedelta(seconds=1))
        check(rank, "timeout_seconds", torch_smddp.backend_of(pair).timeout_seconds, 1.0)
        if rank == 1:
            time.sleep(6)
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(4), group=pair)
            raise AssertionError(f"rank {rank}: all_reduce with a late peer did not time out")
        except RuntimeError as e:
            took = time.monotonic() - start
            assert took < 5, f"rank {rank}: raised after {took:.1f} s: {e}"
            if rank == 0:
                assert "Timed out after 1000 ms" in str(e), str(e)
    reduce_on(rank, None, list(range(world)), "world group after a subgroup timed out")
    dist.destroy_process_group()


def reinit(rank, world, init_method):
    """destroy_process_group, then init again in the same process (new store each time)."""
    for cycle in range(3):
        dist.init_process_group("smddp", init_method=f"{init_method}.{cycle}", rank=rank,
                                world_size=world, timeout=timedelta(seconds=60))
        t = torch.full((3,), float(rank + cycle))
        dist.all_reduce(t)
        want = float(sum(r + cycle for r in range(world)))
        check(rank, f"cycle {cycle}", t.tolist(), [want] * 3)
        dist.destroy_process_group()
        assert not dist.is_initialized()
