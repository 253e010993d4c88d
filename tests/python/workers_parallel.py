# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_parallel.py: what large-model training runs on smddp besides FSDP2.

- tensor parallelism: an MLP parallelized colwise / rowwise (parallelize_module) over the "tp"
  dimension of a 2 x 2 DeviceMesh: output and gradients equal the single-process model's;
- distributed checkpoints: FSDP2 state saved by 4 ranks, loaded by 2 (resharded): every
  parameter equals the saved model's;
- a torch.compile'd function of functional collectives (all_reduce, all_gather_tensor,
  reduce_scatter_tensor): equal to the closed-form values.
"""
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn


def init(rank, world, init_method):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))


class Mlp(nn.Module):
    def __init__(self):
        super().__init__()
        self.w1 = nn.Linear(16, 32)
        self.w2 = nn.Linear(32, 16)

    def forward(self, x):
        return self.w2(torch.relu(self.w1(x)))


def mlp(seed=0):
    torch.manual_seed(seed)
    return Mlp()


def close(rank, what, got, want, tol=1e-5):
    assert torch.allclose(got, want, rtol=tol, atol=tol), \
        f"rank {rank}: {what}: max difference {(got - want).abs().max().item()}"


def tensor_parallel(rank, world, init_method):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                                   parallelize_module)

    init(rank, world, init_method)
    mesh = init_device_mesh("cpu", (2, 2), mesh_dim_names=("dp", "tp"))
    ref = mlp()
    model = parallelize_module(mlp(), mesh["tp"], {"w1": ColwiseParallel(), "w2": RowwiseParallel()})
    dp = mesh["dp"].get_local_rank()
    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(10 + dp))
    out = model(x)
    want = ref(x)
    close(rank, "tensor-parallel forward", out, want)
    out.sum().backward()
    want.sum().backward()
    for name, p in model.named_parameters():
        q = dict(ref.named_parameters())[name]
        close(rank, f"tensor-parallel grad {name}", p.grad.full_tensor(), q.grad)
    dist.barrier()
    dist.destroy_process_group()


def cpu_mesh(world):
    """A 1-D mesh on CPU: fully_shard's default mesh is on the accelerator when there is one."""
    from torch.distributed.device_mesh import init_device_mesh

    return init_device_mesh("cpu", (world,))


def checkpoint_save(rank, world, init_method, path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    init(rank, world, init_method)
    model = mlp(seed=1)
    fully_shard(model, mesh=cpu_mesh(world))
    dcp.save({"model": model.state_dict()}, checkpoint_id=path)
    dist.barrier()
    dist.destroy_process_group()


def checkpoint_load(rank, world, init_method, path):
    import torch.distributed.checkpoint as dcp
    from torch.distributed.fsdp import fully_shard

    init(rank, world, init_method)
    saved = mlp(seed=1)  # what the 4 saving ranks held, unsharded
    model = mlp(seed=2)  # other values, resharded over this world
    fully_shard(model, mesh=cpu_mesh(world))
    state = {"model": model.state_dict()}
    dcp.load(state, checkpoint_id=path)
    model.load_state_dict(state["model"])
    for name, p in model.named_parameters():
        close(rank, f"checkpoint {name}", p.full_tensor(), dict(saved.named_parameters())[name],
              tol=0)
    dist.barrier()
    dist.destroy_process_group()


def compiled_collectives(rank, world, init_method):
    import torch.distributed._functional_collectives as funcol

    init(rank, world, init_method)
    group = dist.group.WORLD

    def step(x):
        s = funcol.all_reduce(x * 2, "sum", group)
        g = funcol.all_gather_tensor(x, 0, group)
        r = funcol.reduce_scatter_tensor(g, "sum", 0, group)
        return s + 1, g, r

    compiled = torch.compile(step, backend="aot_eager", fullgraph=True)
    for n in (4, 6):
        x = torch.arange(n * 1.0) + rank
        s, g, r = compiled(x)
        ranks = torch.arange(world * 1.0)
        close(rank, "compiled all_reduce", s, 2 * (world * torch.arange(n * 1.0) + ranks.sum()) + 1)
        close(rank, "compiled all_gather", g,
              torch.cat([torch.arange(n * 1.0) + q for q in range(world)]))
        whole = torch.cat([torch.arange(n * 1.0) + q for q in range(world)]) * world
        close(rank, "compiled reduce_scatter", r, whole[rank * n:(rank + 1) * n])
    dist.barrier()
    dist.destroy_process_group()
