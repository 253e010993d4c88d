# SPDX-License-Identifier: Apache-2.0
"""Workers of test_reconfigure.py: torch's reconfigure API on smddp (torch >= 2.15), the handles,
the refusals, and what happens to the generation that is replaced."""
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ErrorType

import workers_faults


def _join(rank, world, init_method, timeout_s=30):
    """A reconfigure-regime default group on a TCPStore all processes share; returns the store."""
    host, port = init_method[len("tcp://"):].rsplit(":", 1)
    store = dist.TCPStore(host, int(port), world, rank == 0, timeout=timedelta(seconds=60))
    dist.init_process_group("smddp", store=dist.PrefixStore("pg", store), rank=rank,
                            world_size=world, timeout=timedelta(seconds=timeout_s),
                            enable_reconfigure=True)
    return store


def _handles(store, rank, world, tag):
    store.set(f"{tag}/{rank}", dist._get_reconfigure_handle())
    return [store.get(f"{tag}/{r}").decode() for r in range(world)]


def _expect(rank, what, fn, *needles):
    try:
        fn()
    except RuntimeError as e:
        for needle in needles:
            assert needle in str(e), f"rank {rank}: {what}: {needle!r} not in: {e}"
        return str(e)
    raise AssertionError(f"rank {rank}: {what} did not raise")


def _check_sum(rank, members, what):
    """all_reduce of (process id + 1) * 10 + i over `members` (process ids, rank = position)."""
    n = 1003
    t = (rank + 1) * 10.0 + torch.arange(n, dtype=torch.float64)
    dist.all_reduce(t)
    want = sum((m + 1) * 10.0 for m in members) + len(members) * torch.arange(n, dtype=torch.float64)
    assert torch.equal(t, want), f"process {rank}: {what}: all_reduce {t[:4]} != {want[:4]}"


def _sync(store, rank, world, tag):
    store.set(f"{tag}/done/{rank}", "1")
    store.wait([f"{tag}/done/{r}" for r in range(world)], timedelta(seconds=60))


def api(rank, world, init_method):
    store = _join(rank, world, init_method)
    pg = dist.group.WORLD
    assert pg.supports_reconfigure
    _expect(rank, "a collective before the first reconfigure", lambda: dist.all_reduce(torch.ones(1)),
            "enable_reconfigure=True", "no communicator until reconfigure")
    hs = _handles(store, rank, world, "h")
    assert hs[rank].startswith("smddp/1;host=") and f"pid={os.getpid()}" in hs[rank], hs[rank]
    assert dist._get_reconfigure_handle() == hs[rank], "the handle is stable"

    # two of the four: the others wait; the group's rank and size follow
    if rank in (0, 1):
        dist._reconfigure(1, [hs[0], hs[1]]).wait()
        assert (dist.get_rank(), dist.get_world_size()) == (rank, 2)
        _check_sum(rank, [0, 1], "generation 1")
    _sync(store, rank, world, "g1")

    # all four, in reverse: ranks by position
    order = [3, 2, 1, 0]
    dist._reconfigure(2, [hs[p] for p in order]).wait()
    assert (dist.get_rank(), dist.get_world_size()) == (order.index(rank), 4)
    _check_sum(rank, order, "generation 2")
    root = torch.tensor([float(rank)])
    dist.broadcast(root, src=0)
    assert root.item() == 3.0, f"process {rank}: rank 0 is process 3, broadcast gave {root}"

    # a set: smddp orders the members by host, then pid
    dist._reconfigure(3, set(hs)).wait()
    by_pid = sorted(range(world), key=lambda p: int(hs[p].split(";pid=")[1].split(";")[0]))
    assert dist.get_rank() == by_pid.index(rank), (rank, dist.get_rank(), by_pid)
    _check_sum(rank, by_pid, "generation 3 (a set)")

    # refusals: nothing changes, the group still works
    _expect(rank, "a uuid used before", lambda: dist._reconfigure(2, hs), "uuid 2 was used before")
    _expect(rank, "another backend's handle", lambda: dist._reconfigure(10, hs + ["gloo:1:-1"]),
            "'gloo:1:-1' is not an smddp reconfigure handle")
    _expect(rank, "a handle twice", lambda: dist._reconfigure(11, hs + [hs[0]]), "listed twice")
    others = [h for h in hs if h != hs[rank]]
    _expect(rank, "without this process", lambda: dist._reconfigure(12, others),
            "is not among the 3 member handles")
    foreign = hs[rank].replace("group=", "group=other.")
    _expect(rank, "a handle of another group", lambda: dist._reconfigure(13, [foreign]),
            "belongs to group")
    _check_sum(rank, by_pid, "generation 3 after the refusals")

    # a pending collective of the generation that is replaced fails, naming the reconfigure
    if rank in (0, 1):
        dist._reconfigure(4, [hs[0], hs[1]]).wait()
        pending = None
        if rank == 0:  # process 1 never joins this one
            pending = dist.all_reduce(torch.ones(8), async_op=True)
        store.set(f"posted/{rank}", "1")
        store.wait(["posted/0", "posted/1"], timedelta(seconds=30))
        dist._reconfigure(5, [hs[0], hs[1]]).wait()
        if pending is not None:
            _expect(rank, "the replaced generation's collective", pending.wait,
                    "reconfigured to generation 5", "belonged to the generation before")
        _check_sum(rank, [0, 1], "generation 5")
        backend = pg._get_backend(torch.device("cpu"))
        assert backend.get_error() == ErrorType.SUCCESS, backend.get_error()
    _sync(store, rank, world, "end")
    dist.destroy_process_group()


def cycles(rank, world, init_method, count, mark, slack, results_dir):
    """`count` reconfigures in a row (members alternately in rank order and reversed), one checked
    all_reduce in each; fds, threads and RSS after `mark` and after the last within `slack`."""
    store = _join(rank, world, init_method)
    hs = _handles(store, rank, world, "h")
    samples = {}
    start = time.monotonic()
    for i in range(1, count + 1):
        order = list(range(world)) if i % 2 else list(reversed(range(world)))
        dist._reconfigure(i, [hs[p] for p in order]).wait()
        _check_sum(rank, order, f"generation {i}")
        if i in (mark, count):
            samples[i] = workers_faults._resources()
    took = time.monotonic() - start
    with open(os.path.join(results_dir, f"rank{rank}.txt"), "w") as f:
        f.write(f"{count} reconfigures in {took:.1f} s ({took / count * 1000:.0f} ms each): "
                f"{samples}\n")
    first, last = samples[mark], samples[count]
    for key, allowed in slack.items():
        grew = last[key] - first[key]
        assert grew <= allowed, (f"rank {rank}: {key} grew by {grew:.1f} between reconfigure "
                                 f"{mark} and {count} (allowed {allowed}): {samples}")
    _sync(store, rank, world, "end")
    dist.destroy_process_group()
