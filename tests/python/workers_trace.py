# SPDX-License-Identifier: Apache-2.0
"""Rank body for test_trace.py: `calls` all_reduces of 64 floats (rank `slow` sleeps 10 ms before
each), then one broadcast and one all_gather, each checked against its closed form, under the
SMDDP_TRACE the test sets.
Invariant: every rank makes the same calls.
"""
import time

import torch
import torch.distributed as dist


def traced(rank, world, init_method, slow, calls):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    try:
        for k in range(calls):
            if rank == slow:
                time.sleep(0.01)
            t = torch.full((64,), float(rank + k))
            dist.all_reduce(t)
            assert torch.equal(t, torch.full((64,), world * (world - 1) / 2 + world * k)), t[:4]
        b = torch.full((8,), float(rank))
        dist.broadcast(b, src=1)
        assert torch.equal(b, torch.ones(8)), b
        parts = [torch.empty(4) for _ in range(world)]
        dist.all_gather(parts, torch.full((4,), float(rank)))
        assert all(torch.equal(p, torch.full((4,), float(r))) for r, p in enumerate(parts))
    finally:
        dist.destroy_process_group()


def profiled(rank, world, init_method):
    """Under torch.profiler, each collective carries an smddp mark with its size, algorithm and
    plane; returns nothing, asserts."""
    import re

    from torch.profiler import ProfilerActivity, profile

    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    try:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            t = torch.ones(64)
            dist.all_reduce(t)
            b = torch.zeros(2048, dtype=torch.bfloat16)
            dist.broadcast(b, src=0)
            out = torch.empty(4 * world)
            dist.all_gather_into_tensor(out, torch.ones(4))
        names = [e.name for e in prof.events() if e.name.startswith("smddp:")]
        wanted = [r"smddp:all_reduce\(float32, 64, sum\) 256 B \[\w+\] host",
                  r"smddp:broadcast\(bfloat16, 2048, root=0\) 4 KiB \[\w+\] host",
                  r"smddp:all_gather\(float32, 4\) 16 B \[\w+\] host"]
        for w in wanted:
            assert sum(1 for n in names if re.fullmatch(w, n)) == 1, (w, names)
        assert len(names) == 3, names
        assert torch.equal(t, torch.full((64,), float(world)))
    finally:
        dist.destroy_process_group()
