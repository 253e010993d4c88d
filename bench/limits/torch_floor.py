#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch_floor: what one torch.distributed call costs when nothing moves (world size 1), per
backend, next to one plain ATen op. This is the floor of any torch-level latency: a backend's
collective through torch can never be faster than this plus its own engine time.
With --after (MiB sizes), it also prices the call with cold caches, as it runs after a large
collective: each call follows an in-place add on a tensor of that size (which, like the
collective, sweeps the core's caches), and the add's own time, from a loop of adds alone, is
subtracted (median over interleaved rounds).

Usage: .venv/bin/python bench/limits/torch_floor.py [--backends smddp,gloo] [--calls N]
           [--after 1,2,4]
Prints one line per (backend, call): the best of 5 loops of N calls, in microseconds per call;
the --after rows: the median of 7 interleaved rounds of max(200, N / 10 / MiB) calls each.
Invariant: world size 1 on 127.0.0.1, a fresh free port per backend; nothing leaves the host.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
from compare_lib.common import free_port  # noqa: E402


def loop_us(fn, calls):
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    return (time.perf_counter() - t0) / calls * 1e6


def per_call_us(fn, calls):
    loop_us(fn, min(calls, 2000))  # warm-up
    return min(loop_us(fn, calls) for _ in range(5))


def after_touch_us(call, mib, calls, rounds=7):
    """Median over rounds of (touch + call) - (touch alone), per call, touch = big.add_(1)."""
    big = torch.zeros(int(mib * (1 << 20)) // 4)
    both = lambda: (big.add_(1), call())  # noqa: E731
    alone = lambda: big.add_(1)  # noqa: E731
    for fn in (both, alone):
        loop_us(fn, min(calls, 200))
    return statistics.median(loop_us(both, calls) - loop_us(alone, calls) for _ in range(rounds))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backends", default="smddp,gloo")
    p.add_argument("--calls", type=int, default=50000)
    p.add_argument("--after", default="", help="MiB sizes for the cold-cache rows, e.g. 1,2,4")
    args = p.parse_args()
    torch.set_num_threads(1)  # one core sweeps the caches, as in bench/compare's torch workers
    t = torch.zeros(16)
    print(f"# torch {torch.__version__}; 16-element float32 tensor, world size 1, "
          f"best of 5 x {args.calls} calls")
    print(f"{'aten':>6s}  t.add_(0) (one ATen op, no communication)  "
          f"{per_call_us(lambda: t.add_(0), args.calls):6.2f} us")
    for backend in args.backends.split(","):
        if backend == "smddp":
            import torch_smddp  # noqa: F401  (registers the backend)
        dist.init_process_group(backend=backend, init_method=f"tcp://127.0.0.1:{free_port()}",
                                rank=0, world_size=1)
        pg = dist.distributed_c10d._get_default_group()
        outs = [torch.zeros(16)]
        opts = dist.AllreduceOptions()
        collectives = [("dist.all_reduce(t)", lambda: dist.all_reduce(t)),
                       ("dist.broadcast(t, 0)", lambda: dist.broadcast(t, 0)),
                       ("dist.all_gather([o], t)", lambda: dist.all_gather(outs, t))]
        rows = collectives + [
            ("dist.barrier()", lambda: dist.barrier()),
            ("pg.allreduce([t]).wait() (no torch.distributed Python layer)",
                 lambda: pg.allreduce([t], opts).wait())]
        for name, fn in rows:
            print(f"{backend:>6s}  {name:62s}  {per_call_us(fn, args.calls):6.2f} us", flush=True)
        for mib in [float(x) for x in args.after.split(",") if x]:
            calls = max(200, int(args.calls / 10 / mib))
            for name, fn in collectives:
                label = f"{name} after touching {mib:g} MiB"
                print(f"{backend:>6s}  {label:62s}  {after_touch_us(fn, mib, calls):6.2f} us",
                      flush=True)
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
