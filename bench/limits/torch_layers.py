#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""torch_layers: where the time of one smddp collective through torch goes, layer by layer, with
2 ranks on this host. For each size it times the same synchronous loop three ways:
  python  dist.<collective>(...) from Python, as a training script (and bench/compare) calls it;
  c++     the same ProcessGroupSmddp method and Work.wait() from C++, with no Python between
          the calls (torch_smddp's diagnostic _time_calls): the shim and the engine only;
  engine  the engine's own perf tool (<engine-dir>/<collective>_perf -np 2 -z 1), with the same
          buffer placement (in place for all_reduce and broadcast, out of place for all_gather).
python - c++ is what the Python layers cost per call at that size; c++ / engine is the shim's
share. Rounds alternate python and c++ so machine noise hits both alike; medians of the rounds.

Usage: .venv/bin/python bench/limits/torch_layers.py [--collective all_gather]
           [--sizes 64K,1M,4M] [--calls 2000] [--rounds 5] [--engine-dir build/bench]
Invariants: ranks on 127.0.0.1 only, each bound to one core when there are two; the torch ranks
together, and each engine tool run, are bounded by --timeout seconds.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # bench/
from compare_lib.common import (bind_argv, element_count, free_port, parse_bytes,  # noqa: E402
                                 worker_env)
from compare_lib.runners import EngineRunner, RunError  # noqa: E402


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch_smddp  # noqa: F401  (registers the backend)

    dist.init_process_group("smddp", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=args.rank, world_size=args.world, timeout=args.timeout_td)
    pg = dist.distributed_c10d._get_default_group()
    results = []
    for size in args.size_list:
        count = element_count(args.collective, size, args.world, "float32")
        data = torch.full((count,), float(args.rank + 1))
        gathers = args.collective == "all_gather"  # outputs of its own only there
        outs = [torch.zeros(count) for _ in range(args.world)] if gathers else []
        calls = {"all_reduce": lambda: dist.all_reduce(data),
                 "broadcast": lambda: dist.broadcast(data, 0),
                 "all_gather": lambda: dist.all_gather(outs, data),
                 "barrier": lambda: dist.barrier()}
        python_call = calls[args.collective]
        py_us, cpp_us = [], []
        for _ in range(args.rounds):
            for _ in range(max(5, args.calls // 100)):
                python_call()
            dist.barrier()
            t0 = time.perf_counter()
            for _ in range(args.calls):
                python_call()
            py_us.append((time.perf_counter() - t0) * 1e6 / args.calls)
            dist.barrier()
            cpp_us.append(pg._time_calls(args.collective, data, outs, args.calls))
        # The slowest rank's median, as every perf tool here reports.
        t = torch.tensor([statistics.median(py_us), statistics.median(cpp_us)],
                         dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        results.append((size, t[0].item(), t[1].item()))
    dist.destroy_process_group()
    if args.rank == 0:
        for size, py, cpp in results:
            print(f"ROW {size} {py:.3f} {cpp:.3f}", flush=True)


def engine_us(args, size):
    """The engine tool's median time for this size over the rounds (compare's EngineRunner: same
    buffer placement as torch, blocking calls), or None when the tool is missing or fails."""
    runner = EngineRunner(args.engine_dir, args.world, "shm", 2, args.timeout)
    per = 4 * (args.world if args.collective == "all_gather" else 1)
    row = element_count(args.collective, size, args.world, "float32") * per  # the tool's row
    times = []
    for _ in range(args.rounds):
        try:
            rows = runner.run(args.collective, "float32", [row], args.calls,
                              max(5, args.calls // 100))["rows"]
        except (RunError, OSError):
            return None
        times.append(rows[0]["time_us"])
    return statistics.median(times)


def launch(args):
    port = free_port()
    env = worker_env("shm")  # as compare runs
    procs = []
    for rank in range(args.world):
        me = [sys.executable, os.path.abspath(__file__), "--rank", str(rank), "--port", str(port)]
        argv = bind_argv(rank) + me + sys.argv[1:]
        out = subprocess.PIPE if rank == 0 else subprocess.DEVNULL  # only rank 0 prints rows
        procs.append(subprocess.Popen(argv, stdout=out, text=True, env=env))
    # Ranks print only a few lines (rank 0's rows at the end), so polling cannot fill a pipe; a
    # rank that fails ends the run at once instead of its peers waiting out the group timeout.
    deadline = time.monotonic() + args.timeout
    while any(p.poll() is None for p in procs):
        failed = any(p.returncode not in (None, 0) for p in procs)
        if failed or time.monotonic() > deadline:
            for p in procs:
                p.kill()
                p.wait()
            sys.exit("torch_layers: a rank failed (its error is above)" if failed else
                     f"torch_layers: the ranks did not finish within {args.timeout} s")
        time.sleep(0.05)
    rows = [line.split()[1:] for line in procs[0].stdout.read().splitlines()
            if line.startswith("ROW ")]
    failed = any(p.returncode != 0 for p in procs)
    if failed or len(rows) != len(args.size_list):
        sys.exit("torch_layers: a rank failed (its error is above)")
    print(f"# {args.collective}, float32, {args.world} ranks, {args.calls} calls per loop, "
          f"median of {args.rounds} rounds (slowest rank); us per call")
    print(f"{'size':>10s} {'python':>9s} {'c++':>9s} {'engine':>9s} "
          f"{'python-c++':>11s} {'c++/engine':>11s} {'python/engine':>14s}")
    for size, py, cpp in rows:
        size, py, cpp = int(size), float(py), float(cpp)
        eng = engine_us(args, size)
        eng_text = f"{eng:9.2f}" if eng else f"{'-':>9s}"
        ratio = f"{cpp / eng:11.2f} {py / eng:14.2f}" if eng else f"{'-':>11s} {'-':>14s}"
        print(f"{size:>10d} {py:9.2f} {cpp:9.2f} {eng_text} {py - cpp:11.2f} {ratio}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--collective", default="all_gather",
                   choices=("all_reduce", "broadcast", "all_gather", "barrier"))
    p.add_argument("--sizes", default="64K,1M,4M")
    p.add_argument("--calls", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--engine-dir", default="build/bench")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--rank", type=int, default=-1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    args.size_list = ([0] if args.collective == "barrier" else
                      [parse_bytes(s) for s in args.sizes.split(",")])
    if args.calls < 1 or args.rounds < 1 or args.world < 1:
        p.error("--calls, --rounds and --world must be positive")
    if args.rank < 0:
        launch(args)
    else:
        import datetime
        args.timeout_td = datetime.timedelta(seconds=args.timeout)
        rank_main(args)


if __name__ == "__main__":
    main()
