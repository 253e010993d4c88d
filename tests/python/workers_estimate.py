# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_time_estimate.py: torch's _time_estimator on smddp groups.

suite: every collective and send/recv inside the context is costed, not run (tensors untouched,
Works complete at once), the estimates are positive, grow with the size, add up, and come out
alike on every rank; rank 0 estimates alone while the others wait at a barrier (nothing is
communicated); afterwards the group runs real collectives with closed-form results; a subgroup
estimates on its own shape.
with_file: SMDDP_COST_MODEL's parameters apply (call_alpha 1 ms: every call costs >= 1000 us).
bad_file: a file that is not the model's fails the estimate's start naming the file and the key.
"""
import torch
import torch.distributed as dist


def _estimate(fn):
    with dist._time_estimator() as e:
        fn()
    return e.estimated_time


def _all(rank, world, n):
    x = torch.full((n,), -1.0)
    y = torch.full((n * world,), -1.0)
    z = torch.full((n,), -1.0)
    big = torch.full((n * world,), -1.0)
    return {
        "all_reduce": (lambda: dist.all_reduce(x), [x]),
        "all_gather": (lambda: dist.all_gather_into_tensor(y, x), [y]),
        "reduce_scatter": (lambda: dist.reduce_scatter_tensor(z, big), [z]),
        "broadcast": (lambda: dist.broadcast(x, src=world - 1), [x]),
        "all_to_all": (lambda: dist.all_to_all_single(y, big), [y]),
        "reduce": (lambda: dist.reduce(x, dst=0), [x]),
        "barrier": (lambda: dist.barrier(), []),
    }


def suite(rank, world, init):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    backend = dist.group.WORLD._get_backend(torch.device("cpu"))
    assert backend._supports_time_estimate
    small, large = {}, {}
    for n, out in ((1024, small), (1 << 20, large)):
        for name, (fn, tensors) in _all(rank, world, n).items():
            out[name] = _estimate(fn)
            for t in tensors:  # not run
                assert bool((t == -1.0).all()), f"rank {rank}: {name} ran during an estimate"
    for name in small:
        assert small[name] > 0, (name, small[name])
        if name != "barrier" and world > 1:  # one rank: nothing moves in place
            assert large[name] > small[name], (name, small[name], large[name])
    # Works complete at once; the async form too.
    x = torch.zeros(4096)
    with dist._time_estimator() as e:
        work = dist.all_reduce(x, async_op=True)
        assert work.is_completed()
        work.wait()
        dist.all_reduce(x)
    one = _estimate(lambda: dist.all_reduce(x))
    assert abs(e.estimated_time - 2 * one) <= 1e-3 * one + 1e-6, (e.estimated_time, one)
    # Point to point: costed, nothing sent (no receive is posted anywhere).
    peer = (rank + 1) % world
    if world > 1:
        assert _estimate(lambda: dist.send(x, dst=peer)) > 0
    # Every rank estimates the same (same shape, same model), up to its measured rates.
    seen = torch.tensor([large["all_reduce"]], dtype=torch.float64)
    lo, hi = seen.clone(), seen.clone()
    dist.all_reduce(lo, op=dist.ReduceOp.MIN)
    dist.all_reduce(hi, op=dist.ReduceOp.MAX)
    assert float(hi) <= 1.5 * float(lo), (float(lo), float(hi))
    # Rank 0 alone: nothing is communicated, so the others need not take part.
    if rank == 0:
        for _ in range(3):
            assert _estimate(lambda: dist.all_reduce(x)) > 0
    dist.barrier()
    # Real calls afterwards: closed-form results, the estimates took nothing from the sequence.
    v = torch.full((7,), float(rank + 1))
    dist.all_reduce(v)
    assert v.tolist() == [world * (world + 1) / 2] * 7, v.tolist()
    g = torch.zeros(3 * world)
    dist.all_gather_into_tensor(g, torch.full((3,), float(rank)))
    assert g.tolist() == [float(r) for r in range(world) for _ in range(3)], g.tolist()
    # A subgroup of the even ranks costs its own shape.
    evens = list(range(0, world, 2))
    sub = dist.new_group(evens)
    if rank in evens:
        t = _estimate_group(sub, torch.ones(1 << 18))
        assert t > 0
    dist.barrier()
    dist.destroy_process_group()


def _estimate_group(group, t):
    with dist._time_estimator(group=group) as e:
        dist.all_reduce(t, group=group)
    return e.estimated_time


def with_file(rank, world, init):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    x = torch.ones(16)
    assert _estimate(lambda: dist.all_reduce(x)) >= 1000.0
    two = _estimate(lambda: (dist.all_reduce(x), dist.all_reduce(x)))
    assert two >= 2000.0, two
    dist.barrier()
    dist.destroy_process_group()


def bad_file(rank, world, init, path):
    dist.init_process_group("smddp", init_method=init, rank=rank, world_size=world)
    try:
        with dist._time_estimator():
            dist.all_reduce(torch.ones(4))
        raise AssertionError("a bad SMDDP_COST_MODEL file was accepted")
    except RuntimeError as e:
        text = str(e)
        assert path in text and '"net_alpah" is not a parameter' in text, text
    dist.all_reduce(torch.ones(4))  # the group still runs
    dist.destroy_process_group()
