# SPDX-License-Identifier: Apache-2.0
"""SMDDP_DETERMINISTIC=1: all_reduce, reduce_scatter and reduce of random float32, bfloat16 and
float16 data, at sizes across the selector's thresholds, must equal bit for bit the reduction of
every rank's input in rank order, ((x0 + x1) + x2) + ..., computed here by torch from the same
seeds (every rank can make every rank's input); AVG must equal that sum divided by the ranks.
Equal to one reference, the results are equal across every SMDDP_ALGO, arena on or off, and any
layout of ranks over hosts. Prints "determinism digest <hex>" (the results' sha256) on rank 0.
With `expect_differ` (the default order, SMDDP_DETERMINISTIC unset) it asserts instead that some
float32 all_reduce differs from the rank order: the check can fail.
Runs under torchrun (`python determinism_job.py`) or as a harness target (run_rank).
"""
import hashlib
import os
import sys

import torch
import torch.distributed as dist

DTYPES = [torch.float32, torch.bfloat16, torch.float16]
COUNTS = [1, 3, 17, 1000, 4099, 16411, 65537, 262147, 1048583]


def _input(rank, count, dtype, salt):
    g = torch.Generator().manual_seed(1000003 * rank + 7919 * count + salt)
    return torch.randn(count, generator=g).mul_(100).to(dtype)


def _rank_order(inputs):
    acc = inputs[0] + inputs[1]
    for x in inputs[2:]:
        acc = acc + x
    return acc


def body(rank, world, expect_differ=False):
    digest = hashlib.sha256()
    differed = 0
    for di, dtype in enumerate(DTYPES):
        for count in COUNTS:
            xs = [_input(r, count, dtype, di) for r in range(world)]
            want = _rank_order(xs)
            got = xs[rank].clone()
            dist.all_reduce(got)
            if expect_differ:
                differed += int(not torch.equal(got, want))
                continue
            assert torch.equal(got, want), (rank, dtype, count, (got != want).sum().item())
            digest.update(got.view(torch.uint8).numpy().tobytes() if dtype == torch.float32
                          else got.view(torch.int16).numpy().tobytes())
            avg = xs[rank].clone()
            dist.all_reduce(avg, op=dist.ReduceOp.AVG)
            assert torch.equal(avg, want / world), (rank, "avg", dtype, count)
            # reduce_scatter: block b of every rank's input of world x count elements.
            per = max(count // world, 1)
            ys = [_input(r, per * world, dtype, 50 + di) for r in range(world)]
            block = torch.empty(per, dtype=dtype)
            dist.reduce_scatter_tensor(block, ys[rank].clone())
            mine = _rank_order([y[rank * per:(rank + 1) * per] for y in ys])
            assert torch.equal(block, mine), (rank, "reduce_scatter", dtype, per)
            red = xs[rank].clone()
            dist.reduce(red, dst=1 % world)
            if rank == 1 % world:
                assert torch.equal(red, want), (rank, "reduce", dtype, count)
    if expect_differ:
        assert differed > 0, "every float32 all_reduce equalled the rank order without the mode"
        return None
    if rank == 0:
        print(f"determinism digest {digest.hexdigest()}", flush=True)
    return digest.hexdigest()


def run_rank(rank, world, init_method, expect_differ=False, digest_path=None):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    try:
        digest = body(rank, world, expect_differ)
        if digest_path is not None and rank == 0:
            with open(digest_path, "w") as f:
                f.write(digest)
        dist.barrier()
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    dist.init_process_group("smddp")
    body(dist.get_rank(), dist.get_world_size())
    dist.barrier()
    print(f"determinism job passed on rank {dist.get_rank()} ({os.uname().nodename})", flush=True)
    dist.destroy_process_group()
    sys.exit(0)
