# SPDX-License-Identifier: Apache-2.0
"""Workers for test_dtypes.py: every dtype x op through torch on smddp, beside gloo."""
import json
import os
from datetime import timedelta

import torch
import torch.distributed as dist

from dtype_cases import OPS, all_dtypes, defined, expected, inputs, kind, reduce_op, same

COUNT = 13  # elements per rank block: odd


def _call(fn):
    try:
        fn()
        return None
    except Exception as e:  # noqa: BLE001  (any refusal counts as not accepted)
        return f"{type(e).__name__}: {e}"


def _reductions(rank, world, gloo, report):
    n = COUNT
    for dtype in all_dtypes():
        for op in OPS:
            tag = f"rank {rank}: {dtype} {op}"
            x = inputs(dtype, op, rank, n * world)
            ok = defined(dtype, op)
            want = expected(dtype, op, world, n * world) if ok else None
            t = x.clone()
            err = _call(lambda: dist.all_reduce(t, op=reduce_op(op)))
            if not ok:
                assert err is not None, f"{tag}: accepted a pair smddp does not define"
                report["refused"].append(f"{dtype} {op}")
            else:
                assert err is None, f"{tag}: all_reduce raised {err}"
                assert same(t, want), f"{tag}: all_reduce {t.tolist()} != {want.tolist()}"
                r = x.clone()
                dist.reduce(r, dst=world - 1, op=reduce_op(op))
                if rank == world - 1:
                    assert same(r, want), f"{tag}: reduce {r.tolist()} != {want.tolist()}"
                out = torch.empty(n, dtype=dtype)
                err_rs = _call(lambda: dist.reduce_scatter_tensor(out, x.clone(), op=reduce_op(op)))
                if kind(dtype) == "complex" and err_rs is not None:
                    report["torch_refuses"].append(f"reduce_scatter_tensor {dtype} {op}: {err_rs}")
                else:
                    assert err_rs is None, f"{tag}: reduce_scatter_tensor raised {err_rs}"
                    mine = want[rank * n:(rank + 1) * n]
                    assert same(out, mine), f"{tag}: reduce_scatter {out.tolist()} != {mine}"
                report["checked"] += 1
            g = x.clone()
            gerr = _call(lambda: dist.all_reduce(g, op=reduce_op(op), group=gloo))
            if gerr is None:
                report["gloo_accepts"].append(f"{dtype} {op}")
                assert err is None, f"{tag}: gloo accepts it, smddp raised {err}"
                if dtype == torch.bool:  # gloo's bool SUM may store 2 for true: compare truth
                    g = g.view(torch.uint8) != 0
                assert same(g, t), f"{tag}: gloo {g.tolist()} != smddp {t.tolist()}"


def _block(dtype, rank, j, n):
    es = torch.empty(0, dtype=dtype).element_size()
    raw = [(rank * 131 + j * 17 + b * 7 + 3) % 256 for b in range(n * es)]
    return torch.tensor(raw, dtype=torch.uint8).view(dtype)


def _moves(rank, world):
    n = COUNT
    for dtype in all_dtypes():
        tag = f"rank {rank}: {dtype}"
        t = _block(dtype, rank, 0, n)
        dist.broadcast(t, src=0)
        assert same(t, _block(dtype, 0, 0, n)), f"{tag}: broadcast"
        out = torch.empty(world * n, dtype=dtype)
        dist.all_gather_into_tensor(out, _block(dtype, rank, 0, n))
        assert same(out, torch.cat([_block(dtype, r, 0, n) for r in range(world)])), \
            f"{tag}: all_gather_into_tensor"
        send = torch.cat([_block(dtype, rank, j, n) for j in range(world)])
        recv = torch.empty(world * n, dtype=dtype)
        dist.all_to_all_single(recv, send)
        assert same(recv, torch.cat([_block(dtype, r, rank, n) for r in range(world)])), \
            f"{tag}: all_to_all_single"
        dst = world - 1
        gathered = [torch.empty(n, dtype=dtype) for _ in range(world)] if rank == dst else None
        dist.gather(_block(dtype, rank, 1, n), gathered, dst=dst)
        if rank == dst:
            for r in range(world):
                assert same(gathered[r], _block(dtype, r, 1, n)), f"{tag}: gather block {r}"
        got = torch.empty(n, dtype=dtype)
        parts = [_block(dtype, 0, j + 2, n) for j in range(world)] if rank == 0 else None
        dist.scatter(got, parts, src=0)
        assert same(got, _block(dtype, 0, rank + 2, n)), f"{tag}: scatter"
        if world > 1:
            inbox = torch.empty(n, dtype=dtype)
            reqs = [dist.isend(_block(dtype, rank, 9, n), (rank + 1) % world),
                    dist.irecv(inbox, (rank - 1) % world)]
            for r in reqs:
                r.wait()
            assert same(inbox, _block(dtype, (rank - 1) % world, 9, n)), f"{tag}: send/recv"


def _float8_rounding(rank, world, report):
    """Sums and products of random float8 values, against torch's own rounding of the float32
    result (world 2: one rounding per element)."""
    for name in ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                 "float8_e8m0fnu"):
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        gen = torch.Generator().manual_seed(1000 + rank)
        xs = [torch.randint(0, 256, (4096,), dtype=torch.uint8, generator=torch.Generator()
                            .manual_seed(1000 + r)).view(dtype) for r in range(world)]
        for op in ("SUM", "PRODUCT"):
            t = xs[rank].clone()
            dist.all_reduce(t, op=reduce_op(op))
            f = xs[0].float() + xs[1].float() if op == "SUM" else xs[0].float() * xs[1].float()
            want = f.to(dtype)
            nan = want.float().isnan()
            assert torch.equal(t.float().isnan(), nan), f"rank {rank}: {name} {op}: NaN positions"
            keep = ~nan
            assert torch.equal(t.view(torch.uint8)[keep], want.view(torch.uint8)[keep]), \
                f"rank {rank}: {name} {op}: differs from torch's rounding"
            report["float8_elements"] += int(keep.sum())
        del gen


def every_dtype(rank, world, init_method, out_dir):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo", timeout=timedelta(seconds=60))
    report = {"checked": 0, "refused": [], "gloo_accepts": [], "torch_refuses": [],
              "float8_elements": 0}
    _reductions(rank, world, gloo, report)
    _moves(rank, world)
    if world == 2:
        _float8_rounding(rank, world, report)
    with open(os.path.join(out_dir, f"rank{rank}.json"), "w") as f:
        json.dump(report, f)
    dist.destroy_process_group()
