# SPDX-License-Identifier: Apache-2.0
"""Rank bodies of test_hostile_ports.py."""
import os
import time

import torch
import torch.distributed as dist


def collectives_for(rank, world, init_method, pid_dir, seconds):
    """all_reduce and broadcast with closed-form results for `seconds`, pid published for the
    attacker."""
    open(os.path.join(pid_dir, str(os.getpid())), "w").close()
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    end = time.monotonic() + seconds
    k = 0
    while True:
        n = (0, 1, 7, 1000, 65536)[k % 5]
        t = torch.full((n,), float(rank + k))
        dist.all_reduce(t)
        expected = float(sum(range(world)) + world * k)
        assert torch.equal(t, torch.full((n,), expected)), (k, n, t[:4])
        b = torch.full((3,), float(k) if rank == k % world else -1.0)
        dist.broadcast(b, src=k % world)
        assert torch.equal(b, torch.full((3,), float(k))), (k, b)
        k += 1
        # Every rank stops at the same k: the first to see the time out tells the others.
        flag = torch.tensor([1.0 if time.monotonic() > end else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0:
            break
    dist.destroy_process_group()
