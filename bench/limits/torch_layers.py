#!/usr/bin/env python3
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
Invariants: ranks on 127.0.0.1 only, each bound to one core when there are two; every loop is
bounded by the group's timeout (--timeout seconds, also the whole run's limit).
"""
import argparse
import os
import socket
import statistics
import subprocess
import sys
import time

SIZE_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def parse_size(text):
    text = text.strip().upper()
    if text and text[-1] in SIZE_SUFFIX:
        return int(text[:-1]) * SIZE_SUFFIX[text[-1]]
    return int(text)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def element_count(collective, size, world):
    per = 4 * (world if collective == "all_gather" else 1)
    return size // per


def rank_main(args):
    import torch
    import torch.distributed as dist
    import torch_smddp  # noqa: F401  (registers the backend)

    dist.init_process_group("smddp", init_method=f"tcp://127.0.0.1:{args.port}",
                            rank=args.rank, world_size=args.world, timeout=args.timeout_td)
    pg = dist.distributed_c10d._get_default_group()
    results = []
    for size in args.size_list:
        count = element_count(args.collective, size, args.world)
        data = torch.full((count,), float(args.rank + 1))
        outs = [torch.zeros(count) for _ in range(args.world)]
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


def row_bytes(collective, size, world):
    """The size the perf tool reports for `size` (whole elements; barrier: 0)."""
    if collective == "barrier":
        return 0
    return element_count(collective, size, world) * 4 * (world if collective == "all_gather" else 1)


def engine_us(args, size):
    """The engine tool's median time for this size (same placement as torch), or None when the
    tool is missing or fails (its bound: --timeout per run; it kills its own ranks)."""
    exe = os.path.join(args.engine_dir, f"{args.collective}_perf")
    if not os.path.exists(exe):
        return None
    want = row_bytes(args.collective, size, args.world)
    argv = [exe, "-b", str(want), "-e", str(want), "-np", str(args.world), "-z", "1",
            "-n", str(args.calls), "-w", str(max(5, args.calls // 100))]
    in_place = args.collective in ("all_reduce", "broadcast")
    times = []
    for _ in range(args.rounds):
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            return None
        if out.returncode != 0:
            return None
        for line in out.stdout.splitlines():
            cols = line.split()
            if len(cols) >= 10 and cols[0] == str(want):
                times.append(float(cols[9] if in_place else cols[5]))
    return statistics.median(times) if times else None


def launch(args):
    port = free_port()
    cpus = sorted(os.sched_getaffinity(0))
    procs = []
    for rank in range(args.world):
        bind = ["taskset", "-c", str(cpus[rank])] if args.world <= len(cpus) else []
        argv = bind + [sys.executable, os.path.abspath(__file__), "--rank", str(rank),
                       "--port", str(port)] + sys.argv[1:]
        out = subprocess.PIPE if rank == 0 else subprocess.DEVNULL  # only rank 0 prints rows
        procs.append(subprocess.Popen(argv, stdout=out, text=True))
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
                      [parse_size(s) for s in args.sizes.split(",")])
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
