# SPDX-License-Identifier: Apache-2.0
"""One rank of a 2-rank job that ends in an error (run as a script by test_crash.py).

    python crash_job.py RANK STORE_DIR SCENARIO

Scenarios (every one must end with the Python exception's exit status 1, promptly, on both ranks):
  after      both ranks run collectives, then raise at top level with async collectives in flight
  inside     rank 0 raises before a collective that rank 1 is already inside
  bad_input  rank 1's collective raises on its own input (uncaught) while rank 0 is inside a
             matching collective
  callback   both raise from a Future callback's result while the group is alive
"""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_smddp  # noqa: F401


def main(rank, store_dir, scenario):
    dist.init_process_group("smddp", init_method=f"file://{store_dir}/store", rank=rank,
                            world_size=2, timeout=timedelta(seconds=60))
    t = torch.ones(1000)
    for _ in range(5):
        dist.all_reduce(t)
    if scenario == "after":
        for _ in range(20):
            dist.all_reduce(torch.ones(4096), async_op=True)  # never waited for
        raise RuntimeError(f"rank {rank}: planned error after collectives")
    if scenario == "inside":
        if rank == 0:
            raise RuntimeError("rank 0: planned error while rank 1 is inside all_reduce")
        dist.all_reduce(t)  # must fail: rank 0 is gone
        raise AssertionError("rank 1: all_reduce completed without its peer")
    if scenario == "bad_input":
        if rank == 1:
            odd = torch.empty(3, dtype=getattr(torch, "bits8", torch.complex32))
            dist.broadcast(odd, 0)  # raises inside the call
            raise AssertionError("rank 1: a broadcast of an unsupported dtype did not raise")
        dist.all_reduce(t)  # must fail: rank 1 is gone
        raise AssertionError("rank 0: all_reduce completed without its peer")
    if scenario == "callback":
        work = dist.all_reduce(t, async_op=True)
        fut = work.get_future().then(lambda f: 1 / 0)
        fut.wait()  # raises ZeroDivisionError from the callback
        raise AssertionError(f"rank {rank}: the callback's error was lost")
    raise ValueError(scenario)


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2], sys.argv[3])
