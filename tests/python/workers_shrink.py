# SPDX-License-Identifier: Apache-2.0
"""Workers of test_shrink_and_hooks.py: dist.shrink_group on smddp (with and without a lost
rank), get_error as failures happen, abort hooks and completion listeners."""
import os
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ErrorType
from torch.distributed.distributed_c10d import SHRINK_ABORT

import torch_smddp
from workers_reconfigure import _check_sum, _expect


def _init(rank, world, init_method, timeout_s=30):
    host, port = init_method[len("tcp://"):].rsplit(":", 1)
    store = dist.TCPStore(host, int(port), world, rank == 0, timeout=timedelta(seconds=60))
    dist.init_process_group("smddp", store=dist.PrefixStore("pg", store), rank=rank,
                            world_size=world, timeout=timedelta(seconds=timeout_s))
    return store


def _error_of(group=None):
    pg = group if group is not None else dist.group.WORLD
    return pg._get_backend(torch.device("cpu")).get_error()


class Counter:
    """A hook that counts its calls (abort hooks run on an smddp thread)."""

    def __init__(self):
        self.calls, self.lock = 0, threading.Lock()

    def __call__(self):
        with self.lock:
            self.calls += 1


def shrink_without_loss(rank, world, init_method):
    """SHRINK_DEFAULT: rank 1 leaves on purpose; the others shrink the default group and go on;
    then they shrink a subgroup of theirs (ranks of that subgroup)."""
    store = _init(rank, world, init_method)
    _check_sum(rank, list(range(world)), "before the shrink")
    if rank == 1:
        store.set("left", "1")
        dist.destroy_process_group()
        return
    store.wait(["left"], timedelta(seconds=30))
    group = dist.shrink_group([1])
    survivors = [r for r in range(world) if r != 1]
    assert group is dist.group.WORLD, "the shrunk default group becomes the default group"
    assert (dist.get_rank(), dist.get_world_size()) == (survivors.index(rank), world - 1)
    _check_sum(rank, survivors, "after the shrink")
    assert _error_of() == ErrorType.SUCCESS
    # a DeviceMesh over the shrunk world, and a DTensor sharded on it
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    full = torch.arange(4.0 * (world - 1))
    dt = distribute_tensor(full, mesh, [Shard(0)])
    assert torch.equal(dt.full_tensor(), full), (rank, dt.full_tensor())
    # a subgroup of the survivors, shrunk in turn (its own ranks)
    sub = dist.new_group(list(range(world - 1)))
    t = torch.ones(5)
    dist.all_reduce(t, group=sub)
    assert t.tolist() == [world - 1.0] * 5, t
    if dist.get_rank() != 0:
        smaller = dist.shrink_group([0], group=sub)
        t = torch.full((5,), float(rank))
        dist.all_reduce(t, group=smaller)
        assert t.tolist() == [float(sum(survivors[1:]))] * 5, (rank, t)
    dist.barrier()
    dist.destroy_process_group()


def shrink_after_loss(rank, world, init_method, victim, pending):
    """A rank dies; the others shrink it out with SHRINK_ABORT. Without `pending` they first see
    the loss: REMOTE_ERROR, the abort hook once however many collectives fail. With it, they
    shrink while their all_reduce with the dead rank is still in flight (no hang: the abort ends
    it)."""
    store = _init(rank, world, init_method, timeout_s=60)
    hook = Counter()
    pg = dist.group.WORLD
    assert pg.supports_abort_hooks
    pg.register_abort_hook(7, hook)
    pg.register_abort_hook(8, lambda: (_ for _ in ()).throw(RuntimeError("a hook that throws")))
    pg.unregister_abort_hook(8)
    _check_sum(rank, list(range(world)), "before the loss")
    assert hook.calls == 0 and _error_of() == ErrorType.SUCCESS
    in_flight = None
    if pending and rank != victim:  # the victim never joins this one
        in_flight = dist.all_reduce(torch.ones(64), async_op=True)
    store.set(f"ready/{rank}", "1")
    store.wait([f"ready/{r}" for r in range(world)], timedelta(seconds=30))
    if rank == victim:
        os._exit(9)  # nonzero: the harness stops waiting for it
    start = time.monotonic()
    if not pending:
        _expect(rank, "all_reduce with a dead peer", lambda: dist.all_reduce(torch.ones(64)),
                f"rank {victim}")
        assert time.monotonic() - start < 15, "the loss is noticed within seconds"
        assert _error_of() == ErrorType.REMOTE_ERROR, _error_of()
        for _ in range(3):  # later collectives fail too; the hook ran once, for the first error
            _expect(rank, "a collective on the broken group", lambda: dist.barrier(), "broken")
        assert hook.calls == 1, f"rank {rank}: abort hook ran {hook.calls} times"
    group = dist.shrink_group([victim], shrink_flags=SHRINK_ABORT)
    assert time.monotonic() - start < 30, "no hang"
    if in_flight is not None:
        _expect(rank, "the collective in flight at the shrink", in_flight.wait, "smddp")
    survivors = [r for r in range(world) if r != victim]
    assert dist.get_world_size(group) == world - 1
    _check_sum(rank, survivors, "after SHRINK_ABORT")
    assert _error_of(group) == ErrorType.SUCCESS
    assert hook.calls <= 1
    dist.destroy_process_group()


def timeout_error(rank, world, init_method):
    """get_error says TIMEOUT on the rank whose collective timed out (its peer never came); the
    abort hook runs there once; completion listeners see every collective with its outcome."""
    store = _init(rank, world, init_method, timeout_s=3)
    records, lock = [], threading.Lock()

    def listener(record):
        with lock:
            records.append(record)

    backend = torch_smddp.backend_of()
    backend.add_completion_listener(1, listener)
    hook = Counter()
    dist.group.WORLD.register_abort_hook(1, hook)
    t = torch.ones(6)
    dist.all_reduce(t)
    dist.broadcast(t, src=1)
    out = [torch.empty(6) for _ in range(world)]
    dist.all_gather(out, t)
    dist.all_reduce(t, async_op=True).wait()
    dist.barrier()
    # Listeners run where each completion is established (the completion thread or a waiter):
    # no order among them is promised, so the records are put in the engine's sequence order.
    with lock:
        ordered = sorted(records, key=lambda r: r["sequence"])
    seen = [(r["op"], r["ok"]) for r in ordered]
    want = [("ALLREDUCE", True), ("BROADCAST", True), ("ALLGATHER", True), ("ALLREDUCE", True),
            ("BARRIER", True)]
    assert seen == want, f"rank {rank}: listener saw {seen}"
    sequences = [r["sequence"] for r in ordered]
    assert len(set(sequences)) == 5, sequences
    assert all(r["duration_ms"] is not None and r["duration_ms"] >= 0 for r in records), records
    assert len({r["key"] for r in records}) == 5, "completion keys are unique"
    store.set(f"synced/{rank}", "1")
    store.wait([f"synced/{r}" for r in range(world)], timedelta(seconds=30))
    if rank == 0:  # rank 1 never joins this one
        _expect(rank, "an all_reduce nobody joins", lambda: dist.all_reduce(torch.ones(3)),
                "Timed out")
        assert _error_of() == ErrorType.TIMEOUT, _error_of()
        assert hook.calls == 1
        deadline = time.monotonic() + 10
        while len(records) < 6 and time.monotonic() < deadline:
            time.sleep(0.01)
        last = records[-1]
        assert last["op"] == "ALLREDUCE" and not last["ok"] and "Timed out" in last["error"], last
    else:
        assert _error_of() == ErrorType.SUCCESS and hook.calls == 0
    backend.remove_completion_listener(1)
    store.set(f"end/{rank}", "1")
    store.wait([f"end/{r}" for r in range(world)], timedelta(seconds=30))
    dist.destroy_process_group()
