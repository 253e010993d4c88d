# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_pipeline.py: torch.distributed.pipelining over smddp. A model of `world`
blocks is split one block per rank; GPipe or 1F1B trains it for 3 steps (4 microbatches, SGD)
while every rank also trains the unsplit model on the same data: the last stage's microbatch
losses average to the unsplit loss at every step, and every stage's final parameters equal the
unsplit model's block (the schedule's activations and gradients travel by send / recv).
"""
import copy
from datetime import timedelta

import torch
import torch.distributed as dist
from torch import nn


def model(world):
    torch.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(16, 16), nn.Tanh()) for _ in range(world)])


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    return torch.randn(8, 16, generator=g), torch.randn(8, 16, generator=g)


def suite(rank, world, init_method, schedule):
    from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    full = model(world)
    ref = copy.deepcopy(full)
    block = full[rank]
    stage = PipelineStage(block, stage_index=rank, num_stages=world, device=torch.device("cpu"))
    cls = {"gpipe": ScheduleGPipe, "1f1b": Schedule1F1B}[schedule]
    sched = cls(stage, n_microbatches=4, loss_fn=nn.MSELoss())
    opt = torch.optim.SGD(block.parameters(), lr=0.1)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(3):
        x, y = batch(step)
        opt.zero_grad()
        losses = []
        if rank == 0:
            sched.step(x)
        elif rank == world - 1:
            sched.step(target=y, losses=losses)
        else:
            sched.step()
        opt.step()
        ref_opt.zero_grad()
        want = nn.functional.mse_loss(ref(x), y)
        want.backward()
        ref_opt.step()
        if rank == world - 1:
            got = torch.stack(losses).mean()
            assert torch.allclose(got, want, rtol=1e-5, atol=1e-6), \
                f"rank {rank}: {schedule} step {step}: loss {got.item()} vs unsplit {want.item()}"
    for (name, p), q in zip(block.named_parameters(), ref[rank].parameters()):
        assert torch.allclose(p, q, rtol=1e-5, atol=1e-6), \
            f"rank {rank}: {schedule}: parameter {name} differs from the unsplit model's"
    dist.barrier()
    dist.destroy_process_group()
