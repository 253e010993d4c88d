# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_faults.py: bad input through torch.distributed raises at once and leaves
the group usable; mismatched collectives and a SIGKILLed peer make every other rank raise, well
before the process group's timeout.
Invariant: every rank issues the same collectives in the same order, except where a test is about
ranks that do not (mismatch) or a rank that dies (kill); those tests use their own group.
"""
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_smddp

ANY_ERROR = (RuntimeError, ValueError, NotImplementedError)


def expect_raise(rank, what, fn, *needles, errors=(RuntimeError,), bound_s=1.0):
    """fn must raise one of `errors` within bound_s, its message containing every needle."""
    start = time.monotonic()
    try:
        fn()
    except errors as e:
        took, msg = time.monotonic() - start, str(e)
        assert took < bound_s, f"rank {rank}: {what}: raised only after {took:.1f} s: {msg}"
        for needle in needles:
            assert needle in msg, f"rank {rank}: {what}: {needle!r} not in: {msg[:800]}"
        return msg
    raise AssertionError(f"rank {rank}: {what}: no error")


def check_usable(rank, world, tag):
    t = torch.full((5,), float(rank + 1))
    dist.all_reduce(t)
    want = world * (world + 1) / 2
    assert t.tolist() == [want] * 5, f"rank {rank}: all_reduce after {tag}: {t.tolist()} != {want}"


def _unsupported():
    """A CPU tensor of a dtype no backend reduces (torch.bits8; 1.13 has none: complex32)."""
    return torch.empty(3, dtype=getattr(torch, "bits8", torch.complex32))


def bad_input(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    # unsupported op / dtype: rejected on the calling thread, nothing sent
    expect_raise(rank, "AVG on bool", lambda: dist.all_reduce(
        torch.ones(3, dtype=torch.bool), op=dist.ReduceOp.AVG), "smddp", "AVG", "Bool")
    check_usable(rank, world, "AVG on bool")
    expect_raise(rank, "an unsupported dtype", lambda: dist.broadcast(_unsupported(), 0),
                 "smddp", "dtype")
    expect_raise(rank, "BXOR on float32", lambda: dist.all_reduce(
        torch.ones(3), op=dist.ReduceOp.BXOR), "smddp", "BXOR", "integer or bool")
    check_usable(rank, world, "bits8 / BXOR")
    # all_gather_into_tensor whose input overlaps its output anywhere but this rank's block
    out = torch.zeros(4 * world)
    expect_raise(rank, "overlapping all_gather_into_tensor",
                 lambda: dist.all_gather_into_tensor(out, out[1:5]), "smddp", "overlap")
    outs = [torch.zeros(4) for _ in range(world)]
    expect_raise(rank, "all_gather input aliases an output",
                 lambda: dist.all_gather(outs, outs[(rank + 1) % world]), "smddp", "overlap")
    check_usable(rank, world, "overlapping buffers")
    # ... while the real in-place form (input == this rank's block of the output) works
    out = torch.zeros(4 * world)
    out[4 * rank:4 * rank + 4] = float(rank + 10)
    dist.all_gather_into_tensor(out, out[4 * rank:4 * rank + 4])
    want = [float(r + 10) for r in range(world) for _ in range(4)]
    assert out.tolist() == want, f"rank {rank}: in-place all_gather_into_tensor: {out.tolist()}"
    # roots outside the group
    for root in (world, -1):
        expect_raise(rank, f"broadcast root {root}", lambda: dist.broadcast(torch.ones(3), root),
                     "root", errors=ANY_ERROR)
    check_usable(rank, world, "bad roots")
    # meta tensors: torch 1.13 refuses them itself (no kernel); torch 2.x runs its own meta
    # kernel (shapes only) and never calls the backend, so nothing may be sent or raised
    if torch.__version__ < "2":
        expect_raise(rank, "meta tensor", lambda: dist.all_reduce(torch.ones(3, device="meta")),
                     errors=(RuntimeError, NotImplementedError))
    else:
        issued = torch_smddp.backend_of()._issued_count()
        dist.all_reduce(torch.ones(3, device="meta"))
        assert torch_smddp.backend_of()._issued_count() == issued, "meta all_reduce reached smddp"
    if torch.cuda.is_available():  # a CPU-only build of torch_smddp must refuse CUDA clearly
        try:
            dist.all_reduce(torch.ones(3, device="cuda"))
        except RuntimeError as e:
            assert "smddp" in str(e) and "CUDA" in str(e), str(e)
    check_usable(rank, world, "wrong devices")
    non_contiguous(rank, world)
    dist.destroy_process_group()


def non_contiguous(rank, world):
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6) + rank
    t = base.t()  # transposed view
    assert not t.is_contiguous()
    dist.all_reduce(t)
    want = (torch.arange(24, dtype=torch.float32).reshape(4, 6) * world
            + world * (world - 1) / 2)
    assert torch.equal(base, want), f"rank {rank}: all_reduce on a transposed view: {base}"
    strided = torch.zeros(10)
    view = strided[::2]
    if rank == world - 1:
        view.copy_(torch.arange(5, dtype=torch.float32))
    dist.broadcast(view, src=world - 1)
    assert strided[::2].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0], f"rank {rank}: {strided}"
    assert strided[1::2].tolist() == [0.0] * 5, f"rank {rank}: broadcast wrote between strides"
    src = torch.full((3, 2), float(rank)).t()  # non-contiguous input
    outs = [torch.zeros(4, 3)[::2, :] for _ in range(world)]  # non-contiguous outputs (2 x 3)
    dist.all_gather(outs, src)
    for r, o in enumerate(outs):
        assert o.tolist() == [[float(r)] * 3] * 2, f"rank {rank}: all_gather slot {r}: {o}"
    flat = torch.zeros(2 * world, 3)
    dist.all_gather_into_tensor(flat, src)
    want = torch.repeat_interleave(torch.arange(world, dtype=torch.float32), 2)
    assert torch.equal(flat[:, 0], want), f"rank {rank}: all_gather_into_tensor: {flat}"


def mismatch(rank, world, init_method, kind):
    """Ranks disagree on one collective: every rank must raise, well within the 5 s PG timeout +
    slack, and nothing may hang."""
    if kind == "root":  # the roots' disagreement is seen through the shared-memory arena
        os.environ["SMDDP_PROVIDER"] = "shm"
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=5))
    check_usable(rank, world, "init")
    if kind == "size":
        fn = lambda: dist.all_reduce(torch.ones(10 if rank == 0 else 20))  # noqa: E731
    elif kind == "dtype":
        fn = lambda: dist.all_reduce(torch.ones(8, dtype=torch.float32 if rank == 0  # noqa: E731
                                                else torch.float64))
    elif kind == "root":  # each rank its own root: the broadcast's root checks at the next call
        def fn():
            dist.broadcast(torch.ones(8), rank)
            dist.all_reduce(torch.ones(8))
    else:  # different collectives
        fn = (lambda: dist.all_reduce(torch.ones(8))) if rank == 0 else (  # noqa: E731
            lambda: dist.broadcast(torch.ones(8), 0))
    needles = ("smddp", "broadcast") if kind == "root" else ("smddp",)
    msg = expect_raise(rank, f"{kind} mismatch", fn, *needles, bound_s=20.0)
    print(f"rank {rank}: {kind} mismatch: {msg}", flush=True)
    # The group is broken now: a later collective fails, and so does its Future, whether it was
    # asked for before the wait (completed with the error) or after it (made already failed).
    early = dist.all_reduce(torch.ones(4), async_op=True)
    future = early.get_future()
    expect_raise(rank, "wait on a broken group (Future asked first)", early.wait, "broken",
                 bound_s=20.0)
    expect_raise(rank, "Future asked for before the wait", future.wait, "broken")
    late = dist.all_reduce(torch.ones(4), async_op=True)
    expect_raise(rank, "wait on a broken group (no Future yet)", late.wait, "broken",
                 bound_s=20.0)
    expect_raise(rank, "Future asked for after the wait", late.get_future().wait, "broken")
    dist.destroy_process_group()


def killed_peer(rank, world, init_method, victim, at):
    """`victim` SIGKILLs itself inside a stream of all_reduces; the others must raise quickly (the
    engine watches same-host peers' pids), far inside the 60 s PG timeout."""
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    t = torch.ones(1000)
    last_ok = time.monotonic()
    for i in range(100000):
        if rank == victim and i == at:
            os.kill(os.getpid(), signal.SIGKILL)
        try:
            dist.all_reduce(t)
        except RuntimeError as e:
            took, msg = time.monotonic() - last_ok, str(e)
            assert i >= at, f"rank {rank}: failed at {i} before rank {victim} died: {msg}"
            assert took < 15, f"rank {rank}: raised {took:.1f} s after the last success: {msg}"
            assert "smddp" in msg and f"rank {victim}" in msg, f"rank {rank}: {msg}"
            print(f"rank {rank}: raised {took:.2f} s after the peer died: {msg}", flush=True)
            break
        t.fill_(1.0)
        last_ok = time.monotonic()
    else:
        raise AssertionError(f"rank {rank}: the all_reduces went on after rank {victim} died")
    # torch would destroy the group at exit; a broken group must still shut down promptly
    start = time.monotonic()
    dist.destroy_process_group()
    took = time.monotonic() - start
    assert took < 10, f"rank {rank}: destroy_process_group of a broken group took {took:.1f} s"


def _resources():
    import gc

    gc.collect()
    with open("/proc/self/statm") as f:
        rss_pages = int(f.read().split()[1])
    return {"fds": len(os.listdir("/proc/self/fd")), "threads": len(os.listdir("/proc/self/task")),
            "rss_mib": rss_pages * os.sysconf("SC_PAGE_SIZE") / 2**20}


def init_destroy_cycles(rank, world, init_method, mode, cycles, mark, slack, results_dir):
    """`cycles` x (create a smddp group, one checked all_reduce, destroy it), where the group is
    the default one (mode "default": init_process_group on a fresh prefix of one TCPStore) or a
    subgroup (mode "subgroup": new_group / destroy_process_group(group) under one default
    group); fds, threads and RSS after cycle `mark` and after the last must stay within `slack`.
    Writes the samples to results_dir/<mode>.rank<r>.txt."""
    host, port = init_method[len("tcp://"):].rsplit(":", 1)
    base = dist.TCPStore(host, int(port), world, rank == 0, timeout=timedelta(seconds=60))
    if mode == "subgroup":
        dist.init_process_group("smddp", store=dist.PrefixStore("default", base), rank=rank,
                                world_size=world, timeout=timedelta(seconds=30))
    samples = {}
    start = time.monotonic()
    for i in range(1, cycles + 1):
        if mode == "default":
            dist.init_process_group("smddp", store=dist.PrefixStore(f"cycle{i}", base),
                                    rank=rank, world_size=world, timeout=timedelta(seconds=30))
            check_usable(rank, world, f"init #{i}")
            dist.destroy_process_group()
        else:
            group = dist.new_group(list(range(world)))
            t = torch.ones(3)
            dist.all_reduce(t, group=group)
            assert t.tolist() == [float(world)] * 3, f"rank {rank}: subgroup #{i}: {t}"
            dist.destroy_process_group(group)
        if i in (mark, cycles):
            samples[i] = _resources()
    took = time.monotonic() - start
    if mode == "subgroup":
        dist.destroy_process_group()
    with open(os.path.join(results_dir, f"{mode}.rank{rank}.txt"), "w") as f:
        f.write(f"{cycles} cycles in {took:.1f} s: {samples}\n")
    first, last = samples[mark], samples[cycles]
    for key, allowed in slack.items():
        grew = last[key] - first[key]
        assert grew <= allowed, (
            f"rank {rank}: {key} grew by {grew:.1f} between {mode} create/destroy cycle {mark} and "
            f"{cycles} (allowed {allowed}): {first[key]:.1f} -> {last[key]:.1f}; all: {samples}")
    # the store still works after all of the above; rank 0 serves it, so it leaves last
    base.set(f"done{rank}", "1")
    if rank == 0:
        base.wait([f"done{r}" for r in range(world)], timedelta(seconds=30))
