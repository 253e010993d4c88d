# SPDX-License-Identifier: Apache-2.0
"""Shared definitions for bench/compare: the size ladder, the busbw factors, element sizes and the
closed-form data every backend is checked against.

Invariant: the formulas here are the same as bench/mpi/mpi_coll_perf.c's and the smddp perf
tools' conventions (row size = whole buffer, all_gather count per rank = size / (n * elemsize)),
so rows of different backends describe the same amount of data.
"""
import os
import socket
import statistics

COLLECTIVES = ("all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all", "sendrecv",
               "reduce", "gather", "scatter", "barrier")
# Collectives whose count is per rank (size / (world * elemsize)): the row is the whole buffer.
PER_RANK = ("all_gather", "reduce_scatter", "all_to_all", "gather", "scatter")
# Collectives with a root (always rank 0 here).
ROOTED = ("broadcast", "reduce", "gather", "scatter")
BACKENDS = ("smddp", "smddp-alloc", "gloo", "mpi", "engine")
# CUDA tensors, one column each where a GPU is visible (rank r on GPU r mod the GPUs; several ranks
# on one GPU take NCCL with NCCL_MULTI_RANK_GPU_ENABLE): smddp's NCCL plane, smddp's own plane,
# torch's ProcessGroupNCCL, gloo. Asked for by name (--backends), never by default.
CUDA_BACKENDS = ("smddp-nccl", "smddp-cuda", "nccl", "gloo-cuda")
# The torch backend and SMDDP_GPU_PLANE of each CUDA column.
CUDA_RUNS = {"smddp-nccl": ("smddp", "nccl"), "smddp-cuda": ("smddp", "smddp"),
             "nccl": ("nccl", None), "gloo-cuda": ("gloo", None)}
ELEM_SIZE = {"float32": 4, "bfloat16": 2}


def perf_tool(collective):
    """The engine's perf tool for a collective (nccl-tests' names: alltoall_perf)."""
    return "alltoall_perf" if collective == "all_to_all" else f"{collective}_perf"  # sendrecv_perf


def usable_cpus():
    """The CPUs this process may run on, sorted (its affinity set; a cpuset can be smaller than
    the machine): what decides binding and oversubscription."""
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def usable_cores():
    return len(usable_cpus())


def bind_argv(rank):
    """The command prefix that binds rank `rank` to one CPU (from exec on, before the interpreter
    starts any thread): its own when there are enough, else the CPUs in turn (rank r on the
    (r mod n)-th), as every backend's ranks are placed (see MpiRunner, EngineRunner)."""
    cpus = usable_cpus()
    return ["taskset", "-c", str(cpus[rank % len(cpus)])]


def worker_env(provider):
    """The environment of every benchmark rank: the smddp provider, one OpenMP thread."""
    return dict(os.environ, SMDDP_PROVIDER=provider, OMP_NUM_THREADS="1")


def parse_bytes(text):
    """'64K', '64KiB', '64KB', '1M', '8' -> bytes."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B").rstrip("I")
    return int(t[:-1]) * units[t[-1]] if t and t[-1] in units else int(t)


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def size_ladder(min_bytes, max_bytes, factor):
    """Sizes max/factor^k that are >= min_bytes, ascending. Anchored at the top so the default
    sweep (8 B - 64 MiB, x4) has rows at 4 KiB, 1 MiB and 64 MiB."""
    if factor < 2 or min_bytes < 1 or max_bytes < min_bytes:
        raise ValueError(f"bad sweep: min {min_bytes}, max {max_bytes}, factor {factor}")
    sizes = []
    s = max_bytes
    while s >= min_bytes:
        sizes.append(s)
        if s % factor:
            break
        s //= factor
    return sorted(sizes)


def sweep_sizes(collective, sizes):
    """Barrier has one row (size 0); other collectives use the ladder."""
    return [0] if collective == "barrier" else list(sizes)


def element_count(collective, size, world, dtype):
    if collective == "barrier":
        return 0
    per = ELEM_SIZE[dtype] * (world if collective in PER_RANK else 1)
    return size // per


def busbw_factor(collective, world):
    if collective == "all_reduce":
        return 2.0 * (world - 1) / world
    if collective in PER_RANK:
        return (world - 1) / world
    if collective in ("broadcast", "sendrecv", "reduce"):
        return 1.0
    return 0.0


def algbw_gbps(size, time_us):
    return size / 1e3 / time_us if time_us and time_us > 0 else 0.0


def median_row(rows):
    """Median over rounds of one (backend, size) cell. `rows` are dicts with time_us and wrong
    (and cpu_us, the CPU time per call, where the backend measured it); wrong counts add up (any
    wrong element in any round fails the run)."""
    times = [r["time_us"] for r in rows if r.get("time_us") is not None]
    wrongs = [r["wrong"] for r in rows if r.get("wrong") is not None]
    estimates = [r["estimate_us"] for r in rows if r.get("estimate_us") is not None]
    cpus = [r["cpu_us"] for r in rows if r.get("cpu_us") is not None]
    out = {
        "time_us": statistics.median(times) if times else None,
        "time_us_rounds": times,
        "cpu_us": statistics.median(cpus) if cpus else None,
        "wrong": sum(wrongs) if wrongs else None,
    }
    if estimates:  # the backend's own time estimate (torch's _time_estimator), where it has one
        out["estimate_us"] = statistics.median(estimates)
    return out


def human_size(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= (1 << shift) and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"
