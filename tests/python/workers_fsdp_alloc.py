# SPDX-License-Identifier: Apache-2.0
"""Rank body for test_fsdp_alloc.py: FSDP2 with its communication buffers allocated by the
backend (set_allocate_memory_from_process_group_for_comm: smddp's shareable memory), 10 steps of
an MLP whose layers' all_gather and reduce_scatter are large enough (>= 1 MiB) to run in place,
against the same training over gloo with the default buffers, and against smddp's default path.
Checks: losses and final parameters equal gloo's to 1e-5; smddp handed out the memory and ran
collectives in place on it (memory_stats); prints the step time of both smddp paths (steps 3-10)."""
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.fsdp import fully_shard

import torch_smddp

STEPS = 10
DIM = 512  # 512 x 512 fp32 = 1 MiB a layer


def make_model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(DIM, DIM), nn.ReLU(), nn.Linear(DIM, DIM), nn.ReLU(),
                         nn.Linear(DIM, 8))


def batch(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(4, DIM, generator=g), torch.randn(4, 8, generator=g)


def train(mesh, rank, allocate):
    model = make_model()
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    if allocate:  # each fully_shard module's own buffers
        for module in [model, *[m for m in model if isinstance(m, nn.Linear)]]:
            module.set_allocate_memory_from_process_group_for_comm(True)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    start = 0.0
    for step in range(STEPS):
        if step == 2:  # the first steps set up (FSDP's lazy init, memory first touched)
            start = time.perf_counter()
        x, y = batch(rank, step)
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.detach())
    seconds = (time.perf_counter() - start) / (STEPS - 2)
    return torch.stack(losses), [p.full_tensor().detach().clone() for p in model.parameters()], seconds


def close(rank, what, got, want, tol=1e-5):
    err = (got - want).abs().max().item()
    scale = max(1.0, want.abs().max().item())
    assert err <= tol * scale, f"rank {rank}: {what}: max difference {err}"


def suite(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    gloo = DeviceMesh.from_group(dist.new_group(backend="gloo"), "cpu")
    mesh = init_device_mesh("cpu", (world,))
    backend = torch_smddp.backend_of()
    train(mesh, rank, False)  # warms up what both paths share, so neither times it
    before = backend.memory_stats
    alloc = train(mesh, rank, True)
    after = backend.memory_stats
    default = train(mesh, rank, False)
    want = train(gloo, rank, False)
    for what, run in (("allocate path", alloc), ("default path", default)):
        close(rank, what + ": losses", run[0], want[0])
        for i, (p, q) in enumerate(zip(run[1], want[1])):
            close(rank, f"{what}: parameter {i}", p, q)
    in_place = after["shared_in_place_calls"] - before["shared_in_place_calls"]
    assert after["shared_blocks"] > 0, f"rank {rank}: no tensor allocated by smddp: {after}"
    # Per step: an all_gather of each of 3 layers forward, again backward, a reduce_scatter each.
    assert in_place >= 3 * STEPS, f"rank {rank}: {in_place} calls in place: {after}"
    print(f"rank {rank}: FSDP2 step {alloc[2] * 1e3:.2f} ms with smddp-allocated buffers, "
          f"{default[2] * 1e3:.2f} ms with torch's", flush=True)
    dist.barrier()
    dist.destroy_process_group()
