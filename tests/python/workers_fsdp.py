# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_fsdp.py: FSDP2 (fully_shard) training of a small transformer, 10 steps,
once over smddp and once over gloo in the same job (same seed, same per-rank data), fp32 and bf16
mixed precision (MixedPrecisionPolicy: bf16 parameters and gradient reduction); and HSDP on a
2 x 2 mesh (replicate x shard) over smddp. Checks: losses and the final full parameters equal
gloo's (fp32: to 1e-5; bf16: to bf16 rounding), and fp32 runs equal a local reference that
trains the unsharded model on every rank's batch (the gradient FSDP averages), so a wrong
reduce_scatter or all_gather cannot go unseen even where both backends would agree.
"""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import torch_smddp

STEPS = 10
BATCH, SEQ, DIM = 2, 5, 16


def make_model():
    torch.manual_seed(0)
    layers = [nn.TransformerEncoderLayer(DIM, nhead=2, dim_feedforward=32, dropout=0.0,
                                         batch_first=True) for _ in range(2)]
    return nn.Sequential(*layers, nn.Linear(DIM, 4))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(BATCH, SEQ, DIM, generator=g), torch.randn(BATCH, SEQ, 4, generator=g)


def train_fsdp(mesh, rank, mp_policy=None):
    model = make_model()
    kwargs = {"mesh": mesh}
    if mp_policy is not None:
        kwargs["mp_policy"] = mp_policy
    for layer in model:
        fully_shard(layer, **kwargs)
    fully_shard(model, **kwargs)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        x, y = batch(rank, step)
        loss = nn.functional.mse_loss(model(x).float(), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    params = [p.full_tensor().detach().float().clone() for p in model.parameters()]
    return torch.stack(losses), params


def train_reference(world, rank):
    """The unsharded model on one process: the gradient is the mean of the ranks' gradients."""
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for step in range(STEPS):
        per_rank = [nn.functional.mse_loss(model(x), y)
                    for x, y in (batch(r, step) for r in range(world))]
        (sum(per_rank) / world).backward()
        opt.step()
        opt.zero_grad()
        losses.append(per_rank[rank].detach())
    return torch.stack(losses), [p.detach().clone() for p in model.parameters()]


def close(rank, what, got, want, tol):
    err = (got - want).abs().max().item() if got.numel() else 0.0
    scale = max(1.0, want.abs().max().item() if want.numel() else 0.0)
    assert err <= tol * scale, f"rank {rank}: {what}: max difference {err} (tolerance {tol})"


def compare(rank, what, run, want, tol):
    close(rank, what + ": losses", run[0], want[0], tol)
    assert len(run[1]) == len(want[1])
    for i, (p, q) in enumerate(zip(run[1], want[1])):
        close(rank, f"{what}: parameter {i}", p, q, tol)


def suite(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = dist.new_group(backend="gloo")
    smddp_mesh = init_device_mesh("cpu", (world,))
    gloo_mesh = DeviceMesh.from_group(gloo, "cpu")
    reference = train_reference(world, rank)
    fp32 = train_fsdp(smddp_mesh, rank)
    compare(rank, "fp32 smddp vs gloo", fp32, train_fsdp(gloo_mesh, rank), 1e-5)
    compare(rank, "fp32 smddp vs unsharded reference", fp32, reference, 1e-4)
    bf16 = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.bfloat16)
    compare(rank, "bf16 smddp vs gloo", train_fsdp(smddp_mesh, rank, bf16),
            train_fsdp(gloo_mesh, rank, bf16), 2e-2)
    if world == 4:  # HSDP: replicate over 2, shard over 2
        hsdp = init_device_mesh("cpu", (2, 2), mesh_dim_names=("replicate", "shard"))
        compare(rank, "HSDP 2x2 smddp vs unsharded reference", train_fsdp(hsdp, rank),
                reference, 1e-4)
    if os.environ.get("SMDDP_DEVICE") == "fake" and os.environ.get("SMDDP_DEVICE_IPC") == "1":
        # Tensors mirrored into the fake device within one host: FSDP2's all_gather and
        # reduce_scatter (AVG in fp32) ran on the device through CUDA IPC.
        calls = torch_smddp.backend_of().device_ipc_calls
        for kind in ("all_gather", "reduce_scatter"):
            assert calls.get(kind, 0) >= STEPS, f"rank {rank}: {kind} through CUDA IPC: {calls}"
    dist.barrier()
    dist.destroy_process_group()
