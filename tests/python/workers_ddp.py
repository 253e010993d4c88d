# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_ddp.py (plain, no_sync, join() with uneven inputs, find_unused_parameters,
static_graph, gradient_as_bucket_view, buffer broadcast, fp16/bf16 compression hooks, and on
torch 2.x a torch.compile'd DDP model): the same DDP training (same seed, same per-rank data) once over
smddp (the default group) and once over a gloo group of the same job; after 20 steps parameters
and buffers must agree within fp32 tolerance on every rank, and smddp's must be bitwise equal
across ranks.
Invariant: both runs see identical models, data and optimizer; only the process group differs.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

STEPS = 20


class TwoHeads(nn.Module):
    """Head `b` is used only on even steps: needs find_unused_parameters."""

    def __init__(self):
        super().__init__()
        self.trunk = nn.Linear(8, 16)
        self.a = nn.Linear(16, 4)
        self.b = nn.Linear(16, 4)

    def forward(self, x, use_b=True):
        h = torch.relu(self.trunk(x))
        return self.a(h) + (self.b(h) if use_b else 0)


def make_model(kind):
    torch.manual_seed(0)
    if kind == "bn":
        return nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 4))
    if kind == "heads":
        return TwoHeads()
    return nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 4))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(16, 8, generator=g), torch.randn(16, 4, generator=g)


def bf16_hook(state, bucket):
    # torch 1.13's register_comm_hook refuses bf16_compress_hook by name without CUDA+NCCL;
    # the hook itself is device-agnostic, so call it through a differently named function.
    return default_hooks.bf16_compress_hook(state, bucket)


SCENARIOS = {
    # name: (model kind, DDP kwargs, hook, steps on this rank(rank) or None)
    "basic": ("mlp", {}, None),
    "gradient_as_bucket_view": ("mlp", {"gradient_as_bucket_view": True}, None),
    "static_graph": ("mlp", {"static_graph": True}, None),
    "find_unused_parameters": ("heads", {"find_unused_parameters": True}, None),
    "no_sync": ("mlp", {}, None),
    "join_uneven": ("mlp", {}, None),
    "buffers": ("bn", {"broadcast_buffers": True}, None),
    "fp16_hook": ("mlp", {}, default_hooks.fp16_compress_hook),
    "bf16_hook": ("mlp", {}, bf16_hook),
}
if torch.__version__ >= "2":
    # torch.compile(DDP(model)): dynamo splits the graph at bucket boundaries (DDPOptimizer) and
    # the all_reduces run from the compiled backward
    # (DDPOptimizer wants the first bucket no larger than the others: default bucket sizes)
    SCENARIOS["compiled"] = ("mlp", {"bucket_cap_mb": 25}, None)


def train(name, pg, rank, hook):
    kind, kwargs, _ = SCENARIOS[name]
    model = make_model(kind)
    ddp = DDP(model, process_group=pg, **{"bucket_cap_mb": 0.001, **kwargs})  # several buckets
    if hook is not None:
        ddp.register_comm_hook(pg, hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    steps = STEPS + 3 * rank if name == "join_uneven" else STEPS
    run = torch.compile(ddp) if name == "compiled" else ddp

    def step(i):
        x, y = batch(rank, i)
        out = ddp(x, use_b=(i % 2 == 0)) if kind == "heads" else run(x)
        loss = nn.functional.mse_loss(out, y)
        if name == "no_sync" and i % 2 == 0:
            with ddp.no_sync():
                loss.backward()
            return
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)

    if name == "join_uneven":
        with ddp.join():
            for i in range(steps):
                step(i)
    else:
        for i in range(steps):
            step(i)
    # buffers last: after the final forward each rank holds its own running statistics
    return [t.detach().clone() for t in model.parameters()], [b.clone() for b in model.buffers()]


def compare(rank, name, got, want, rtol, atol):
    for k, (g, w) in enumerate(zip(got, want)):
        if g.dtype.is_floating_point:
            ok = torch.allclose(g, w, rtol=rtol, atol=atol)
        else:
            ok = torch.equal(g, w)
        if not ok:
            diff = (g.double() - w.double()).abs().max().item()
            raise AssertionError(f"rank {rank}: {name}: tensor {k} differs (max |diff| {diff})")


def same_on_all_ranks(rank, world, name, tensors):
    flat = torch.cat([t.double().reshape(-1) for t in tensors])
    outs = [torch.zeros_like(flat) for _ in range(world)]
    dist.all_gather(outs, flat)
    for r in range(world):
        if not torch.equal(outs[r], outs[0]):
            raise AssertionError(f"rank {rank}: {name}: rank {r}'s parameters differ from rank 0's")


def suite(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=120))
    gloo = dist.new_group(backend="gloo")
    smddp = dist.distributed_c10d._get_default_group()
    for name, (_, _, hook) in SCENARIOS.items():
        got, got_buffers = train(name, smddp, rank, hook)
        if name == "bf16_hook":  # gloo has no bfloat16: compare with the uncompressed run
            (want, want_buffers), tol = train(name, gloo, rank, None), (5e-2, 5e-3)
        elif name == "fp16_hook":
            (want, want_buffers), tol = train(name, gloo, rank, hook), (1e-2, 1e-3)
        else:
            (want, want_buffers), tol = train(name, gloo, rank, None), (1e-5, 1e-6)
        compare(rank, name, got + got_buffers, want + want_buffers, *tol)
        same_on_all_ranks(rank, world, name, got)
    dist.destroy_process_group()
