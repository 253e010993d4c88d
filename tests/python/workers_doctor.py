# SPDX-License-Identifier: Apache-2.0
"""Rank bodies for test_doctor.py: three real hangs whose flight-recorder dumps
(SMDDP_DUMP_ON_TIMEOUT, set by the test) the doctor must explain. Each job runs N_OK all_reduces
that every rank makes, then the culprit misbehaves at the next collective:
skip     the culprit does not call the next all_reduce; it waits until the others have dumped.
mismatch the culprit calls all_gather where the others call all_reduce.
stop     the culprit SIGSTOPs itself; a peer SIGCONTs it once the others have dumped, and it
         returns without another collective (so it writes no dump, as a stopped rank would not).
Invariant: the ranks that are not the culprit raise within the 4 s group timeout plus slack, and
every rank finishes: nothing is left for the harness to kill.
"""
import os
import signal
import time
from datetime import timedelta

import torch
import torch.distributed as dist

N_OK = 3


def _wait_for(paths, bound_s=30.0):
    deadline = time.monotonic() + bound_s
    while not all(os.path.exists(p) for p in paths):
        assert time.monotonic() < deadline, f"no dumps {paths} after {bound_s} s"
        time.sleep(0.05)
    time.sleep(0.2)  # let the writers finish the files


def _raises(rank, fn, bound_s=20.0):
    start = time.monotonic()
    try:
        fn()
    except RuntimeError as e:
        took = time.monotonic() - start
        assert took < bound_s, f"rank {rank}: raised after {took:.1f} s: {e}"
        return str(e)
    raise AssertionError(f"rank {rank}: the collective completed")


def hang(rank, world, init_method, scenario, culprit, dump_prefix):
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                            timeout=timedelta(seconds=4))
    t = torch.ones(16)
    for _ in range(N_OK):
        dist.all_reduce(t)
    others = [f"{dump_prefix}.{r}" for r in range(world) if r != culprit]
    if rank == culprit and scenario == "skip":
        _wait_for(others)
    elif rank == culprit and scenario == "stop":
        with open(f"{dump_prefix}.pid", "w") as f:
            f.write(str(os.getpid()))
        time.sleep(1.0)  # five beacon periods: its beacon tells the all_reduces it made
        os.kill(os.getpid(), signal.SIGSTOP)
    elif rank == culprit and scenario == "mismatch":
        out = [torch.zeros(16) for _ in range(world)]
        _raises(rank, lambda: dist.all_gather(out, t))
    else:
        msg = _raises(rank, lambda: dist.all_reduce(t))
        print(f"rank {rank}: {msg}", flush=True)
        if scenario == "stop" and rank == min(r for r in range(world) if r != culprit):
            _wait_for(others)
            with open(f"{dump_prefix}.pid") as f:
                os.kill(int(f.read()), signal.SIGCONT)
    dist.destroy_process_group()
