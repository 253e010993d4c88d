# SPDX-License-Identifier: Apache-2.0
"""Training checks for torch_cuda_check.py: DDP and FSDP2 over smddp on CUDA tensors (the fake
device in the dry run) against the same training over gloo; (name, #wrong) pairs."""
import copy
import os

import torch
import torch.distributed as dist
import torch.nn as nn


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))


def _mismatches(results):
    # within rounding: smddp's reduction order (CUDA IPC: rank order) is not gloo's
    return sum(int((~torch.isclose(a, b, rtol=1e-4, atol=1e-6)).sum().item())
               for a, b in zip(results["smddp"], results["gloo"]))


def ddp_check(rank, world, dev):
    model = _model()
    results = {}
    for backend in ("smddp", "gloo"):
        group = dist.new_group(backend=backend)
        net = nn.parallel.DistributedDataParallel(
            copy.deepcopy(model).to(dev), process_group=group,
            device_ids=None if dev.type == "cpu" else [0])
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(rank)
        for _ in range(20):
            data = torch.randn(16, 32, generator=gen).to(dev)
            opt.zero_grad()
            net(data).square().mean().backward()
            opt.step()
        results[backend] = [p.detach().cpu() for p in net.parameters()]
        dist.destroy_process_group(group)
    return [("ddp smddp == gloo within rounding (20 steps)", _mismatches(results))]


def fsdp_check(rank, world, dev):
    """FSDP2 (fully_shard per layer and at the root), 10 steps; with SMDDP_DEVICE_IPC=1 its
    all_gather and reduce_scatter must have gone through CUDA IPC."""
    import torch_smddp
    from torch.distributed.device_mesh import DeviceMesh
    from torch.distributed.fsdp import fully_shard

    results, ipc_calls = {}, {}
    groups = {b: dist.new_group(backend=b) for b in ("smddp", "gloo")}  # live until the process
    for backend, group in groups.items():                              # group goes (DTensor's)
        mesh = DeviceMesh.from_group(group, dev.type)
        model = _model().to(dev)
        for layer in model:
            if any(True for _ in layer.parameters()):
                fully_shard(layer, mesh=mesh)
        fully_shard(model, mesh=mesh)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        gen = torch.Generator().manual_seed(rank)
        for _ in range(10):
            data = torch.randn(16, 32, generator=gen).to(dev)
            model(data).square().mean().backward()
            opt.step()
            opt.zero_grad()
        results[backend] = [p.full_tensor().detach().cpu() for p in model.parameters()]
        if backend == "smddp":
            ipc_calls = dict(torch_smddp.backend_of(group).device_ipc_calls)
    checks = [("fsdp2 smddp == gloo within rounding (10 steps)", _mismatches(results))]
    if os.environ.get("SMDDP_DEVICE_IPC") == "1":
        missing = [k for k in ("all_gather", "reduce_scatter") if ipc_calls.get(k, 0) < 10]
        checks.append((f"fsdp2 all_gather and reduce_scatter through CUDA IPC {ipc_calls}",
                       len(missing)))
    return checks
