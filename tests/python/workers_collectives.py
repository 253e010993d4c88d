# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_collectives.py: every collective x dtype x op, sync and async, in place
and out of place, contiguous and strided, against closed-form values.

Values: rank r contributes x_r[i] = (r + 1) + (i % 3) (small, exact in every dtype even summed
over 4 ranks); for PRODUCT x_r[i] = 1 + (r + i) % 2, so products stay <= 16 (exact in int8).
AVG on integers truncates toward zero (the float64 mean converted to the dtype does the same).
Invariant: every failure names the rank, the collective, dtype, op and the first wrong index.
"""
import time
from datetime import timedelta

import torch
import torch.distributed as dist

DTYPES = [
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int32, torch.int64, torch.uint8, torch.int8,
]
OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]


def value(r, n, dtype, op="SUM"):
    i = torch.arange(n, dtype=torch.float64)
    v = 1 + torch.remainder(r + i, 2) if op == "PRODUCT" else (r + 1) + torch.remainder(i, 3)
    return v.to(dtype)


def expected(world, n, dtype, op):
    vals = torch.stack([value(r, n, torch.float64, op) for r in range(world)])
    out = {
        "SUM": vals.sum(0), "PRODUCT": vals.prod(0), "MIN": vals.min(0).values,
        "MAX": vals.max(0).values, "AVG": vals.sum(0) / world,
    }[op]
    return out.to(dtype)


def check(rank, what, got, want):
    got64, want64 = got.to(torch.float64), want.to(torch.float64)
    tol = {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(got.dtype, 1e-12)
    bad = (got64 - want64).abs() > tol * want64.abs().clamp(min=1)
    if bad.any():
        i = int(bad.nonzero()[0][0]) if bad.dim() else 0
        g = got64.reshape(-1)[i].item()
        w = want64.reshape(-1)[i].item()
        raise AssertionError(f"rank {rank}: {what}: index {i}: got {g}, expected {w}")


def check_allreduce(rank, world):
    n = 7
    for dtype in DTYPES:
        for op in OPS:
            what = f"all_reduce {dtype} {op}"
            rop = getattr(dist.ReduceOp, op)
            t = value(rank, n, dtype, op)
            dist.all_reduce(t, op=rop)
            check(rank, what + " sync", t, expected(world, n, dtype, op))
            # async, two in flight, one of them strided (staged through a contiguous copy)
            a = value(rank, n, dtype, op)
            base = torch.zeros(n, 2, dtype=dtype)
            base[:, 0] = value(rank, n, dtype, op)
            strided = base[:, 0]
            w1 = dist.all_reduce(a, op=rop, async_op=True)
            w2 = dist.all_reduce(strided, op=rop, async_op=True)
            assert w2.wait() and w1.wait(timeout=timedelta(seconds=60))
            assert w1.is_completed() and w1.is_success(), f"rank {rank}: {what} work state"
            check(rank, what + " async", a, expected(world, n, dtype, op))
            check(rank, what + " strided", base[:, 0], expected(world, n, dtype, op))
            check(rank, what + " strided untouched", base[:, 1], torch.zeros(n, dtype=dtype))
            fut_value = w1.get_future().value()
            assert isinstance(fut_value, list) and fut_value[0] is not None
            check(rank, what + " future", fut_value[0], expected(world, n, dtype, op))
    # large (multi-segment) and empty
    for n, dtype in ((300_007, torch.float32), (70_001, torch.int64), (0, torch.float32)):
        t = value(rank, n, dtype)
        dist.all_reduce(t)
        check(rank, f"all_reduce n={n} {dtype}", t, expected(world, n, dtype, "SUM"))
    # bool travels as uint8: MAX is OR, MIN is AND
    b = torch.tensor([rank == 0, True, False])
    dist.all_reduce(b, op=dist.ReduceOp.MAX)
    assert b.tolist() == [True, True, False], f"rank {rank}: bool MAX {b}"


def check_coalesced(rank, world):
    for dtype in (torch.float32, torch.int64, torch.bfloat16):
        ts = [value(rank, 5, dtype).reshape(5), value(rank, 12, dtype).reshape(3, 4)]
        dist.all_reduce_coalesced(ts)
        check(rank, f"all_reduce_coalesced {dtype}", ts[0], expected(world, 5, dtype, "SUM"))
        check(rank, f"all_reduce_coalesced {dtype}", ts[1].reshape(-1),
              expected(world, 12, dtype, "SUM"))
    # torch's wrapper insists on one dtype; the backend also takes mixed lists (one request each)
    mixed = [value(rank, 4, torch.float64), value(rank, 3, torch.int32)]
    opts = dist.AllreduceCoalescedOptions()
    opts.reduceOp = dist.ReduceOp.MAX
    dist.distributed_c10d._get_default_group().allreduce_coalesced(mixed, opts).wait()
    check(rank, "all_reduce_coalesced mixed", mixed[0], expected(world, 4, torch.float64, "MAX"))
    check(rank, "all_reduce_coalesced mixed", mixed[1], expected(world, 3, torch.int32, "MAX"))


def check_broadcast(rank, world):
    for dtype in DTYPES:
        for root in range(world):
            t = value(rank, 9, dtype)
            dist.broadcast(t, src=root)
            check(rank, f"broadcast {dtype} root {root}", t, value(root, 9, dtype))
    base = torch.zeros(6, 3)
    base[:, 1] = value(rank, 6, torch.float32)
    w = dist.broadcast(base[:, 1], src=world - 1, async_op=True)
    w.wait()
    check(rank, "broadcast strided", base[:, 1], value(world - 1, 6, torch.float32))
    check(rank, "broadcast strided untouched", base[:, 0], torch.zeros(6))


def check_allgather(rank, world):
    for dtype in DTYPES:
        n = 5
        outs = [torch.full((n,), 99).to(dtype) for _ in range(world)]
        dist.all_gather(outs, value(rank, n, dtype))
        for r in range(world):
            check(rank, f"all_gather {dtype} from {r}", outs[r], value(r, n, dtype))
        out = torch.zeros(world * n, dtype=dtype)
        w = dist.all_gather_into_tensor(out, value(rank, n, dtype), async_op=True)
        w.wait()
        want = torch.cat([value(r, n, dtype) for r in range(world)])
        check(rank, f"all_gather_into_tensor {dtype}", out, want)
        # in place: the input is this rank's slice of the output
        out = torch.zeros(world * n, dtype=dtype)
        out[rank * n:(rank + 1) * n] = value(rank, n, dtype)
        dist.all_gather_into_tensor(out, out[rank * n:(rank + 1) * n])
        check(rank, f"all_gather_into_tensor in place {dtype}", out, want)
    # all_gather_coalesced: out[r][j] = input j of rank r (one dtype per call, as torch asks;
    # sizes odd, 0, and a strided input)
    for dtype in (torch.float32, torch.bfloat16, torch.int64):
        ins = [value(rank, 3, dtype), torch.zeros(0, dtype=dtype),
               value(rank, 14, dtype).reshape(7, 2)[:, 1]]
        outs = [[torch.full_like(t, 99) for t in ins] for _ in range(world)]
        dist.all_gather_coalesced(outs, ins)
        for r in range(world):
            want = [value(r, 3, dtype), torch.zeros(0, dtype=dtype),
                    value(r, 14, dtype).reshape(7, 2)[:, 1]]
            for j, (got, w) in enumerate(zip(outs[r], want)):
                check(rank, f"all_gather_coalesced {dtype} [{r}][{j}]", got, w)
    # strided outputs
    bases = [torch.zeros(4, 2) for _ in range(world)]
    dist.all_gather([b[:, 1] for b in bases], value(rank, 4, torch.float32))
    for r in range(world):
        check(rank, f"all_gather strided from {r}", bases[r][:, 1], value(r, 4, torch.float32))
        check(rank, "all_gather strided untouched", bases[r][:, 0], torch.zeros(4))


def check_reduce(rank, world):
    """The root's tensor gets the reduction; the others' keep their input."""
    for dtype in DTYPES:
        for op in OPS:
            for root in range(world):
                t = value(rank, 7, dtype, op)
                w = dist.reduce(t, dst=root, op=getattr(dist.ReduceOp, op), async_op=True)
                w.wait()
                want = expected(world, 7, dtype, op) if rank == root else value(rank, 7, dtype, op)
                check(rank, f"reduce {dtype} {op} to {root}", t, want)
    base = torch.zeros(300_007, 2)
    base[:, 1] = value(rank, 300_007, torch.float32)
    dist.reduce(base[:, 1], dst=world - 1)
    want = expected(world, 300_007, torch.float32, "SUM") if rank == world - 1 else \
        value(rank, 300_007, torch.float32)
    check(rank, "reduce large strided", base[:, 1], want)
    check(rank, "reduce strided untouched", base[:, 0], torch.zeros(300_007))


def check_gather_scatter(rank, world):
    """gather to every root, then scatter from it: closed-form values, every dtype, a strided
    output, and the object forms built on them."""
    for dtype in DTYPES:
        for root in range(world):
            outs = [torch.full((5,), 99).to(dtype) for _ in range(world)] if rank == root else None
            w = dist.gather(value(rank, 5, dtype), outs, dst=root, async_op=True)
            w.wait()
            for r in range(world if rank == root else 0):
                check(rank, f"gather {dtype} to {root} from {r}", outs[r], value(r, 5, dtype))
            ins = [value(10 * root + r, 4, dtype) for r in range(world)] if rank == root else None
            out = torch.full((4,), 99).to(dtype)
            dist.scatter(out, ins, src=root)
            check(rank, f"scatter {dtype} from {root}", out, value(10 * root + rank, 4, dtype))
    base = torch.zeros(3, 2)
    ins = [torch.full((3,), float(r)) for r in range(world)] if rank == 0 else None
    dist.scatter(base[:, 1], ins, src=0)
    check(rank, "scatter strided", base[:, 1], torch.full((3,), float(rank)))
    check(rank, "scatter strided untouched", base[:, 0], torch.zeros(3))
    # strided tensors in the root's lists: each is staged on its own
    grid = torch.zeros(world, 6)
    outs = [grid[r, ::2] for r in range(world)] if rank == 0 else None
    dist.gather(torch.full((3,), float(rank + 1)), outs, dst=0)
    for r in range(world if rank == 0 else 0):
        check(rank, f"gather strided from {r}", grid[r, ::2], torch.full((3,), float(r + 1)))
    check(rank, "gather strided untouched", grid[:, 1::2], torch.zeros(world, 3))
    grid = torch.arange(world * 6, dtype=torch.float32).view(world, 6)
    ins = [grid[r, 1::2] for r in range(world)] if rank == 0 else None
    got = torch.zeros(3)
    dist.scatter(got, ins, src=0)
    check(rank, "scatter from strided", got, torch.arange(3, dtype=torch.float32) * 2 + 6 * rank + 1)
    objs = [None] * world if rank == 0 else None
    dist.gather_object({"rank": rank, "text": "x" * rank}, objs, dst=0)
    if rank == 0:
        assert objs == [{"rank": r, "text": "x" * r} for r in range(world)], objs
    got = [None]
    dist.scatter_object_list(got, [("to", r) for r in range(world)] if rank == 0 else None, src=0)
    assert got[0] == ("to", rank), f"rank {rank}: scatter_object_list: {got}"


def check_reduce_scatter(rank, world):
    """Input block b of rank r is value(r, .) at the global index b * n + i, so this rank's
    output is expected() at rank * n + i."""
    for dtype in DTYPES:
        for op in OPS:
            rop = getattr(dist.ReduceOp, op)
            for n in (1, 5):
                full = value(rank, n * world, dtype, op)
                want = expected(world, n * world, dtype, op)[rank * n:(rank + 1) * n]
                what = f"reduce_scatter_tensor {dtype} {op} n={n}"
                out = torch.full((n,), 99).to(dtype)
                w = dist.reduce_scatter_tensor(out, full.clone(), op=rop, async_op=True)
                w.wait()
                check(rank, what, out, want)
                inplace = full.clone()  # the output is this rank's block of the input
                dist.reduce_scatter_tensor(inplace[rank * n:(rank + 1) * n], inplace, op=rop)
                check(rank, what + " in place", inplace[rank * n:(rank + 1) * n], want)
                out = torch.full((n,), 99).to(dtype)
                dist.reduce_scatter(out, list(full.clone().chunk(world)), op=rop)
                check(rank, f"reduce_scatter {dtype} {op} n={n}", out, want)
    # large (several segments and arena uses), empty, and strided output and inputs
    for n in (100_003, 0):
        out = torch.zeros(n)
        dist.reduce_scatter_tensor(out, value(rank, n * world, torch.float32))
        check(rank, f"reduce_scatter_tensor n={n}", out,
              expected(world, n * world, torch.float32, "SUM")[rank * n:(rank + 1) * n])
    base = torch.zeros(4, 2)
    ins = [value(rank, 8 * world, torch.float32).reshape(world, 4, 2)[b, :, 1] for b in range(world)]
    dist.reduce_scatter(base[:, 1], ins)
    full_want = expected(world, 8 * world, torch.float32, "SUM").reshape(world, 4, 2)[rank, :, 1]
    check(rank, "reduce_scatter strided", base[:, 1], full_want)
    check(rank, "reduce_scatter strided untouched", base[:, 0], torch.zeros(4))


def check_premul_sum(rank, world):
    """ReduceOp.PREMUL_SUM: SUM of factor x input, the factor a number or a per-rank tensor,
    through all_reduce (plain and coalesced), reduce (a non-root's input stays) and
    reduce_scatter_tensor; integer tensors are refused."""
    premul = dist._make_nccl_premul_sum
    for dtype in (torch.float32, torch.float64, torch.bfloat16):
        n = 6
        want = expected(world, n, torch.float64, "SUM") * 2
        t = value(rank, n, dtype)
        dist.all_reduce(t, op=premul(2.0))
        check(rank, f"all_reduce PREMUL_SUM 2.0 {dtype}", t, want.to(dtype))
        t = value(rank, n, dtype)
        factor = torch.tensor([rank + 1.0], dtype=torch.float64)
        dist.all_reduce(t, op=premul(factor if torch.__version__ >= "2" else [factor]))  # 1.13: a list
        per_rank = sum((r + 1) * value(r, n, torch.float64) for r in range(world))
        check(rank, f"all_reduce PREMUL_SUM per-rank factor {dtype}", t, per_rank.to(dtype))
        root = world - 1
        t = value(rank, n, dtype)
        dist.reduce(t, dst=root, op=premul(0.5))
        check(rank, f"reduce PREMUL_SUM {dtype}", t,
              (want / 4).to(dtype) if rank == root else value(rank, n, dtype))
        full = value(rank, n * world, dtype)
        out = torch.zeros(n, dtype=dtype)
        dist.reduce_scatter_tensor(out, full, op=premul(2.0))
        check(rank, f"reduce_scatter_tensor PREMUL_SUM {dtype}", out,
              (expected(world, n * world, torch.float64, "SUM")[rank * n:(rank + 1) * n] * 2)
              .to(dtype))
        check(rank, "reduce_scatter_tensor PREMUL_SUM input untouched", full,
              value(rank, n * world, dtype))
    t = torch.full((3,), rank + 1, dtype=torch.int32)  # integers: an integral factor, exact
    dist.all_reduce(t, op=premul(3.0))
    want = 3 * world * (world + 1) // 2
    assert t.tolist() == [want] * 3, f"rank {rank}: PREMUL_SUM on int32: {t.tolist()} != {want}"
    try:
        dist.all_reduce(torch.ones(3, dtype=torch.int32), op=premul(2.5))
    except RuntimeError as e:
        assert "is not an integer" in str(e), str(e)
    else:
        raise AssertionError(f"rank {rank}: PREMUL_SUM 2.5 on int32 did not raise")


def piece(src, dst, n, dtype):
    """What rank src sends rank dst in the all_to_all checks: exact in every dtype."""
    return (torch.arange(n, dtype=torch.float64) % 5 + 10 * src + dst).to(dtype)


def check_all_to_all(rank, world):
    """all_to_all_single even and with uneven split sizes (zeros among them, 2-D rows), and
    all_to_all over lists; every dtype, a strided output, and a large uneven exchange."""
    for dtype in DTYPES:
        for n in (1, 3):
            inp = torch.cat([piece(rank, d, n, dtype) for d in range(world)])
            out = torch.full((n * world,), 99).to(dtype)
            dist.all_to_all_single(out, inp, async_op=True).wait()
            want = torch.cat([piece(s, rank, n, dtype) for s in range(world)])
            check(rank, f"all_to_all_single {dtype} n={n}", out, want)
        # rank s sends (s + d) % 3 rows of 2 to rank d
        rows = lambda s, d: (s + d) % 3  # noqa: E731
        inp = torch.cat([piece(rank, d, 2 * rows(rank, d), dtype) for d in range(world)])
        out = torch.full((2 * sum(rows(s, rank) for s in range(world)),), 99).to(dtype)
        dist.all_to_all_single(out.view(-1, 2), inp.view(-1, 2),
                               output_split_sizes=[rows(s, rank) for s in range(world)],
                               input_split_sizes=[rows(rank, d) for d in range(world)])
        want = torch.cat([piece(s, rank, 2 * rows(s, rank), dtype) for s in range(world)])
        check(rank, f"all_to_all_single uneven {dtype}", out, want)
        outs = [torch.full((rows(s, rank) + 1,), 99).to(dtype) for s in range(world)]
        dist.all_to_all(outs, [piece(rank, d, rows(rank, d) + 1, dtype) for d in range(world)])
        for s in range(world):
            check(rank, f"all_to_all {dtype} from {s}", outs[s], piece(s, rank, rows(s, rank) + 1,
                                                                       dtype))
    big = lambda s, d: 50_000 + 1_000 * ((s + 2 * d) % 4)  # noqa: E731
    inp = torch.cat([piece(rank, d, big(rank, d), torch.float32) for d in range(world)])
    out = torch.zeros(sum(big(s, rank) for s in range(world)))
    dist.all_to_all_single(out, inp, [big(s, rank) for s in range(world)],
                           [big(rank, d) for d in range(world)])
    check(rank, "all_to_all_single large uneven", out,
          torch.cat([piece(s, rank, big(s, rank), torch.float32) for s in range(world)]))
    base = torch.zeros(world, 2)
    dist.all_to_all_single(base[:, 1], torch.full((world,), float(rank)))
    check(rank, "all_to_all_single strided", base[:, 1], torch.arange(world, dtype=torch.float32))
    check(rank, "all_to_all_single strided untouched", base[:, 0], torch.zeros(world))


def check_dropped_work(rank, world):
    """A Work dropped unwaited (torch's join does that) keeps its tensors until the collective
    ends, and its results still land: rank 0 posts late, so the others' requests are still
    queued when their Work and its only tensor are gone."""
    n = 4096
    kept = value(rank, n, torch.float32)
    if rank == 0:
        time.sleep(0.3)
    dist.all_reduce(value(rank, n, torch.float32), async_op=True)  # its tensor dies with it
    reused = torch.full((n,), 7.0)  # most likely in the freed block
    dist.all_reduce(kept, async_op=True)
    dist.barrier()
    check(rank, "all_reduce dropped Work: memory reused", reused, torch.full((n,), 7.0))
    # host memory: in place once the engine is done (before the barrier); the fake-device test
    # mode copies results back on the completion thread (poll for them, bounded)
    want = expected(world, n, torch.float32, "SUM")
    deadline = time.monotonic() + 10
    while not torch.equal(kept, want) and time.monotonic() < deadline:
        time.sleep(0.01)
    check(rank, "all_reduce dropped Work: result", kept, want)
    # a strided tensor: its staged result is copied back without a wait, by the group's
    # completion thread (after the collective: poll for it, bounded)
    base = torch.zeros(n, 2)
    base[:, 0] = value(rank, n, torch.float32)
    dist.all_reduce(base[:, 0], async_op=True)
    dist.barrier()
    want = expected(world, n, torch.float32, "SUM")
    deadline = time.monotonic() + 10
    while not torch.equal(base[:, 0], want) and time.monotonic() < deadline:
        time.sleep(0.01)
    check(rank, "all_reduce dropped Work: strided", base[:, 0], want)


def suite(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    assert dist.get_backend() == "smddp"
    check_allreduce(rank, world)
    check_coalesced(rank, world)
    check_broadcast(rank, world)
    check_allgather(rank, world)
    check_reduce(rank, world)
    check_gather_scatter(rank, world)
    check_reduce_scatter(rank, world)
    check_all_to_all(rank, world)
    check_premul_sum(rank, world)
    check_dropped_work(rank, world)
    dist.barrier()
    dist.barrier(async_op=True).wait()
    dist.destroy_process_group()
