# SPDX-License-Identifier: Apache-2.0
"""A job with a straggler: rank `slow` sleeps 20 ms before each of `calls` all_reduces (slow -1:
nobody does). Every rank checks each result against its closed form and, after each call, its
group's straggler_report(): it must never name another rank. Prints "first named at call K by
rank R" where the report first names the straggler, and fails when rank 0 takes 100 calls or more.
Runs under torchrun (`python straggler_job.py SLOW CALLS`, the environment's rendezvous) or as a
harness target (run_rank).
Invariant: every rank makes the same calls, then a barrier, so none leaves while another still
answers the detector.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

import torch_smddp


def body(rank, world, slow, calls):
    group = torch_smddp.backend_of()
    first = None
    for k in range(calls):
        if rank == slow:
            time.sleep(0.02)
        t = torch.full((64,), float(rank + 1 + k))
        dist.all_reduce(t)
        want = world * (world + 1) / 2 + world * k
        assert torch.equal(t, torch.full((64,), want)), (rank, k, t[:4])
        report = group.straggler_report()
        assert report["enabled"], report
        assert set(report["named"]) <= {slow}, (rank, k, report)
        assert all(r == slow or not v["named_windows"] for r, v in report["ranks"].items()), report
        if first is None and report["named"] == [slow]:
            first = k
    report = group.straggler_report()
    print(f"rank {rank}: first named at call {first}; report {report}", flush=True)
    if slow >= 0 and rank == 0:
        assert first is not None and first < 100, (first, report)
        assert report["ranks"][slow]["mean_lateness_ms"] > 15, report
        assert report["ranks"][slow]["collectives"] == ["all_reduce"], report
    dist.barrier()
    return first, report


def run_rank(rank, world, init_method, slow, calls):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    try:
        body(rank, world, slow, calls)
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    dist.init_process_group("smddp")
    body(dist.get_rank(), dist.get_world_size(), int(sys.argv[1]), int(sys.argv[2]))
    print(f"straggler job passed on rank {dist.get_rank()} ({os.uname().nodename})", flush=True)
    dist.destroy_process_group()
