# SPDX-License-Identifier: Apache-2.0
"""Workers for test_sparse.py: sparse all_reduce and DDP with sparse embedding gradients."""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn


def _sparse(rank, dtype):
    # rank r holds rows r, r + 1 and 7 (shared by all ranks), some duplicated before coalescing
    idx = torch.tensor([[rank, rank + 1, 7, rank]])
    val = (torch.tensor([[1, 2], [3, 4], [5, 6], [10, 20]], dtype=torch.float64) * (rank + 1)).to(dtype)
    return torch.sparse_coo_tensor(idx, val, (10, 2))


def _expected(world, dtype):
    dense = torch.zeros(10, 2, dtype=torch.float64)
    for r in range(world):
        dense += _sparse(r, torch.float64).to_dense()
    return dense.to(dtype)


def sparse_all_reduce(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    for dtype in (torch.float32, torch.float64, torch.int64, torch.int32):  # gloo has these
        t = _sparse(rank, dtype)
        dist.all_reduce(t)
        assert t.is_sparse and t.is_coalesced(), f"rank {rank}: {dtype}: not a coalesced result"
        want = _expected(world, dtype)
        assert torch.equal(t.to_dense(), want), f"rank {rank}: {dtype}: {t.to_dense()} != {want}"
        g = _sparse(rank, dtype)
        dist.all_reduce(g, group=gloo)
        assert torch.equal(g.to_dense(), t.to_dense()), f"rank {rank}: {dtype}: differs from gloo"
        work = dist.all_reduce(_sparse(rank, dtype), async_op=True)
        work.wait()
        assert torch.equal(work.result()[0].to_dense(), want), f"rank {rank}: Work.result()"
    # dtypes torch cannot coalesce on the CPU (smddp sums them wider and converts back once)
    for name in ("float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"):
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        t = _sparse(rank, dtype)
        dist.all_reduce(t)
        got = t.to(torch.float64).to_dense()  # torch has no to_dense for these dtypes
        # the inputs as the dtype holds them, summed exactly, rounded once to the dtype
        exact = sum(_sparse(r, dtype).to(torch.float64).to_dense() for r in range(world))
        want = exact.to(dtype).to(torch.float64)
        assert torch.equal(got, want), f"rank {rank}: {name}: {got} != {want}"
    # an empty sparse tensor on one rank, a 2-D sparse index with a dense trailing dim elsewhere
    t = torch.sparse_coo_tensor(torch.zeros(1, 0, dtype=torch.long), torch.zeros(0, 2), (10, 2))
    if rank == 0:
        t = _sparse(0, torch.float32)
    dist.all_reduce(t)
    assert torch.equal(t.to_dense(), _sparse(0, torch.float32).to_dense()), f"rank {rank}: empty"
    # errors: another op, and tensors of other shapes on different ranks (all ranks raise)
    try:
        dist.all_reduce(_sparse(rank, torch.float32), op=dist.ReduceOp.MAX)
        raise AssertionError("sparse MAX accepted")
    except RuntimeError as e:
        assert "SUM only" in str(e), str(e)
    bad = torch.sparse_coo_tensor(torch.tensor([[0]]), torch.ones(1, 2), (10 + rank, 2))
    try:
        dist.all_reduce(bad)
        raise AssertionError(f"rank {rank}: sparse tensors of other sizes accepted")
    except RuntimeError as e:
        assert f"rank {rank}" in str(e) and "sizes" in str(e), str(e)
    dist.barrier()
    t = torch.ones(3)
    dist.all_reduce(t)
    assert t.tolist() == [float(world)] * 3, f"rank {rank}: usable after the errors"
    dist.destroy_process_group()


class _Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16, sparse=True)
        self.out = nn.Linear(16, 1)

    def forward(self, idx):
        return self.out(self.emb(idx).mean(dim=1))


def _train(model, group, rank, steps=6):
    ddp = nn.parallel.DistributedDataParallel(model, process_group=group)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.5)
    gen = torch.Generator().manual_seed(100 + rank)
    for _ in range(steps):
        idx = torch.randint(0, 100, (8, 5), generator=gen)
        target = torch.randn(8, 1, generator=gen)
        opt.zero_grad()
        loss = ((ddp(idx) - target) ** 2).mean()
        loss.backward()
        opt.step()
    return [p.detach().clone() for p in model.parameters()]


def ddp_sparse_embedding(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    torch.manual_seed(0)
    base = _Model()
    first = [p.detach().clone() for p in base.parameters()]
    a, b = _Model(), _Model()
    a.load_state_dict(base.state_dict())
    b.load_state_dict(base.state_dict())
    got = _train(a, None, rank)
    ref = _train(b, gloo, rank)
    for p, q, p0 in zip(got, ref, first):
        assert not torch.equal(p, p0), f"rank {rank}: a parameter did not train"
        assert torch.allclose(p, q, rtol=1e-6, atol=1e-7), \
            f"rank {rank}: smddp and gloo differ by {(p - q).abs().max()}"
    gathered = [torch.empty_like(got[0]) for _ in range(world)]
    dist.all_gather(gathered, got[0])
    assert all(torch.equal(g, gathered[0]) for g in gathered), "ranks' embeddings differ"
    dist.destroy_process_group()
