# SPDX-License-Identifier: Apache-2.0
"""One rank of a persistent torch.distributed process group driven by bench/compare.

Usage: torch_worker.py BACKEND RANK WORLD INIT_METHOD. After init_process_group it reads one JSON
command per line on stdin ({"coll", "dtype", "sizes", "iters", "warmup"[, "budget_ms",
"min_iters"]} or {"quit": true}), runs that sweep and answers with one line on stdout starting
with "@@": rank 0 sends the rows (time = max over ranks of the mean of the row's barrier-aligned
calls, `iters` of them or fewer under a budget (calls_for); median_us = max over ranks of the
median call's time; wrong = sum over ranks of the
elements that differ from the closed-form values after a separate checked call; estimate_us = the
backend's time estimate of one call (torch's _time_estimator, max over ranks) where it has one),
other ranks "ok".
A dtype the backend rejects (gloo + bfloat16 on torch 1.13) answers {"unsupported": message}.
The CUDA columns (common.CUDA_BACKENDS) run the same on CUDA tensors, rank r on GPU r mod the
GPUs, each timed loop ended by a device synchronisation.
Invariant: stdout carries only "@@" lines; everything else goes to stderr.
"""
import json
import os
import resource
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from compare_lib.common import CUDA_RUNS, element_count  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def pattern(rank, count, dtype):
    return ((torch.arange(count, dtype=torch.int64) + rank) % 8 + 1).to(dtype)


# smddp-alloc: every buffer allocated by the backend (Backend.allocate_tensor: smddp's shareable
# memory, where large collectives run in place); the others: torch's allocator.
ALLOCATE = None
DEVICE = torch.device("cpu")  # the CUDA columns: this rank's GPU


def zeros(count, dtype):
    if ALLOCATE is None:
        return torch.zeros(count, dtype=dtype, device=DEVICE)
    return ALLOCATE(count, dtype).zero_()


def settle():
    """The calls so far have finished (on the device too)."""
    if DEVICE.type == "cuda":
        torch.cuda.synchronize(DEVICE)


class Case:
    """Buffers and the single call of one collective at one size."""

    def __init__(self, coll, count, dtype, rank, world):
        self.coll, self.count, self.dtype, self.rank, self.world = coll, count, dtype, rank, world
        # reduce_scatter's and all_to_all's inputs hold world blocks of count; reduce_scatter's
        # output is one block, all_to_all's world blocks.
        blocks = world if coll in ("reduce_scatter", "all_to_all", "scatter") else 1
        self.buf = zeros(count * blocks, dtype)
        # Only all_gather has outputs of its own (64 MiB x world would be wasted on the others).
        self.outs = ([zeros(count, dtype) for _ in range(world)]
                     if coll == "all_gather" or (coll == "gather" and rank == 0) else [])
        out = {"reduce_scatter": count, "all_to_all": count * world, "sendrecv": count,
               "scatter": count}.get(coll, 0)
        self.out = zeros(out, dtype)

    def call(self):
        if self.coll == "all_reduce":
            dist.all_reduce(self.buf)
        elif self.coll == "broadcast":
            dist.broadcast(self.buf, src=0)
        elif self.coll == "all_gather":
            dist.all_gather(self.outs, self.buf)
        elif self.coll == "reduce_scatter":
            dist.reduce_scatter_tensor(self.out, self.buf)
        elif self.coll == "all_to_all":
            dist.all_to_all_single(self.out, self.buf)
        elif self.coll == "reduce":
            dist.reduce(self.buf, dst=0)
        elif self.coll == "gather":
            dist.gather(self.buf, self.outs if self.rank == 0 else None, dst=0)
        elif self.coll == "scatter":
            dist.scatter(self.out, list(self.buf.chunk(self.world)) if self.rank == 0 else None,
                         src=0)
        elif self.coll == "sendrecv":  # to the next rank, from the previous one
            r = dist.irecv(self.out, (self.rank - 1) % self.world)
            dist.isend(self.buf, (self.rank + 1) % self.world).wait()
            r.wait()
        else:
            dist.barrier()

    def check(self):
        """Refills closed-form inputs, runs once, counts wrong elements on this rank."""
        if self.coll == "barrier":
            self.call()
            return 0
        if self.coll == "broadcast" and self.rank != 0:
            self.buf.fill_(-1)
        else:
            self.buf.copy_(pattern(self.rank, self.buf.numel(), self.dtype))
        self.call()
        settle()
        if self.coll == "all_gather":
            got = torch.cat(self.outs)
            want = torch.cat([pattern(r, self.count, self.dtype) for r in range(self.world)])
        elif self.coll == "broadcast":
            got, want = self.buf, pattern(0, self.count, self.dtype)
        elif self.coll == "sendrecv":
            got, want = self.out, pattern((self.rank - 1) % self.world, self.count, self.dtype)
        elif self.coll in ("reduce", "gather") and self.rank != 0:
            return 0  # only the root's output is defined
        elif self.coll == "gather":
            got = torch.cat(self.outs)
            want = torch.cat([pattern(r, self.count, self.dtype) for r in range(self.world)])
        elif self.coll == "scatter":
            lo = self.rank * self.count
            got = self.out
            want = pattern(0, self.buf.numel(), self.dtype)[lo:lo + self.count]
        elif self.coll == "all_to_all":  # block s of out is block `rank` of rank s's buf
            n, lo = self.buf.numel(), self.rank * self.count
            got = self.out
            want = torch.cat([pattern(s, n, self.dtype)[lo:lo + self.count]
                              for s in range(self.world)])
        elif self.coll == "reduce_scatter":
            n, lo = self.buf.numel(), self.rank * self.count
            got = self.out
            want = sum(pattern(r, n, torch.float64)[lo:lo + self.count] for r in range(self.world))
            want = want.to(self.dtype)
        else:
            got = self.buf
            want = sum(pattern(r, self.count, torch.float64) for r in range(self.world))
            want = want.to(self.dtype)
        return int((got.float().cpu() != want.float()).sum())


def probe(coll, dtype, rank, world):
    """Runs the collective once on one element; returns an error text if the backend rejects
    the dtype. Type checks happen locally before any message, so every rank agrees."""
    try:
        Case(coll, 1, dtype, rank, world).call()
        return None
    except (RuntimeError, ValueError, TypeError) as e:
        return str(e).splitlines()[0] if str(e) else type(e).__name__


def calls_for(cmd, warm_s):
    """The timed calls of one size: cmd["iters"], or with a budget as many as fit in it at the
    slowest rank's warm-up pace (every rank must make the same number), at least min_iters."""
    if cmd.get("budget_ms") is None:
        return cmd["iters"]
    pace = torch.tensor([warm_s], dtype=torch.float64, device=DEVICE)
    dist.all_reduce(pace, op=dist.ReduceOp.MAX)
    fit = int(cmd["budget_ms"] * 1e-3 / max(float(pace[0]), 1e-9))
    return max(cmd.get("min_iters") or 1, min(cmd["iters"], fit))


def estimator():
    """The group's backend when it estimates times (torch >= 2.15: smddp; gloo does not)."""
    backend = dist.group.WORLD._get_backend(DEVICE)
    return backend if getattr(backend, "_supports_time_estimate", False) else None


def estimate(case):
    """One call costed by the backend's model, not run (microseconds)."""
    with dist._time_estimator() as e:
        case.call()
    return e.estimated_time


def cpu_seconds():
    """CPU time (user + system) this process has used so far, all its threads."""
    u = resource.getrusage(resource.RUSAGE_SELF)
    return u.ru_utime + u.ru_stime


def sweep(cmd, rank, world):
    dtype = DTYPES[cmd["dtype"]]
    err = probe(cmd["coll"], dtype, rank, world)
    if err is not None:
        return {"unsupported": err}
    sizes, warmup = cmd["sizes"], cmd["warmup"]
    times = torch.zeros(len(sizes), dtype=torch.float64, device=DEVICE)
    wrong = torch.zeros(len(sizes), dtype=torch.float64, device=DEVICE)
    cpu = torch.zeros(len(sizes), dtype=torch.float64, device=DEVICE)
    medians = torch.zeros(len(sizes), dtype=torch.float64, device=DEVICE)
    calls = [0] * len(sizes)
    estimates = torch.zeros(len(sizes), dtype=torch.float64, device=DEVICE)
    estimating = estimator() is not None
    paced = max(warmup, 1 if cmd.get("budget_ms") is not None else 0)  # a pace needs a call
    for k, size in enumerate(sizes):
        count = element_count(cmd["coll"], size, world, cmd["dtype"])
        case = Case(cmd["coll"], count, dtype, rank, world)
        t0 = time.perf_counter()
        for _ in range(paced):
            case.call()
        settle()
        iters = calls_for(cmd, (time.perf_counter() - t0) / max(paced, 1))
        dist.barrier()
        c0 = cpu_seconds()
        t0 = time.perf_counter()
        stamps = [t0]
        for _ in range(iters):
            case.call()
            stamps.append(time.perf_counter())
        settle()
        times[k] = (time.perf_counter() - t0) * 1e6 / iters
        # The typical call beside the mean: a mean far above it says the time is in a tail.
        medians[k] = statistics.median(b - a for a, b in zip(stamps, stamps[1:])) * 1e6
        cpu[k] = (cpu_seconds() - c0) * 1e6 / iters
        calls[k] = iters
        wrong[k] = case.check()
        if estimating:
            estimates[k] = estimate(case)
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    dist.all_reduce(medians, op=dist.ReduceOp.MAX)
    if estimating:
        dist.all_reduce(estimates, op=dist.ReduceOp.MAX)
    dist.all_reduce(wrong, op=dist.ReduceOp.SUM)
    dist.all_reduce(cpu, op=dist.ReduceOp.SUM)
    rows = []
    for k, size in enumerate(sizes):
        count = element_count(cmd["coll"], size, world, cmd["dtype"])
        rows.append({"size": size, "count": count, "time_us": float(times[k]),
                     "median_us": float(medians[k]), "cpu_us": float(cpu[k]) / world,
                     "wrong": int(wrong[k]), "iters": calls[k]})
        if estimating:
            rows[-1]["estimate_us"] = float(estimates[k])
    return {"rows": rows}


def main():
    global ALLOCATE, DEVICE
    backend, rank, world, init = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    name = "smddp" if backend == "smddp-alloc" else backend
    if backend in CUDA_RUNS:
        name, plane = CUDA_RUNS[backend]
        if plane:
            os.environ["SMDDP_GPU_PLANE"] = plane  # read by smddp at its first use, below
        DEVICE = torch.device("cuda", rank % torch.cuda.device_count())
        torch.cuda.set_device(DEVICE)  # before the group: its data plane is chosen from it
    if backend.startswith("smddp"):
        import torch_smddp  # noqa: F401  (registers the backend)
    torch.set_num_threads(1)
    dist.init_process_group(name, init_method=init, rank=rank, world_size=world)
    if backend == "smddp-alloc":
        cpu = torch.device("cpu")
        group = dist.group.WORLD._get_backend(cpu)
        ALLOCATE = lambda count, dtype: group.allocate_tensor(count, dtype=dtype, device=cpu)  # noqa
    print("@@" + json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd.get("quit"):
            break
        result = sweep(cmd, rank, world)
        print("@@" + json.dumps(result if rank == 0 or "unsupported" in result else {"ok": True}),
              flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
