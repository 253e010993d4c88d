# SPDX-License-Identifier: Apache-2.0
"""The four ways bench/compare runs a sweep: torch.distributed with smddp or gloo (a persistent
group of worker processes fed one command per sweep), Open MPI (mpi_coll_perf under mpirun) and
the smddp engine's own perf tools (build/bench/<coll>_perf -J).

Each runner's run(coll, dtype, sizes, iters, warmup) returns {"rows": [{size, count, time_us,
cpu_us, wrong}]} (cpu_us: the CPU time per call, the mean over ranks; the torch runner's rows
also carry the calls each size made: iters) or {"unsupported": reason}, and raises RunError on
a failure or a timeout.
Invariant: never hangs and leaves no process behind: every wait has a deadline, and whatever is
still alive at the deadline (or at close) is killed.
"""
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

from .common import ROOTED, bind_argv, element_count, perf_tool, usable_cores

HERE = os.path.dirname(os.path.abspath(__file__))


class RunError(RuntimeError):
    pass


def _pump(proc, rank, out):
    for line in proc.stdout:
        if line.startswith("@@"):
            out.put((rank, json.loads(line[2:])))
    out.put((rank, None))  # end of stream


class TorchGroup:
    """`world` worker processes (torch_worker.py) forming one process group of `backend`."""

    def __init__(self, python, backend, world, env, logdir, timeout, pinned=True, name=None,
                 init=None, launch=None):
        """init: the init_method (default: a file store in a temporary folder); launch(rank):
        the argv prefix that starts rank `rank` elsewhere (bench/testbed: inside a namespace
        host), instead of pinning it here."""
        self.backend, self.world, self.timeout = backend, world, timeout
        name = name or backend
        self.tmp = tempfile.mkdtemp(prefix=f"smddp_compare_{backend}_")
        init = init or "file://" + os.path.join(self.tmp, "store")
        self.replies = queue.Queue()
        self.procs, self.logs = [], []
        worker = os.path.join(HERE, "torch_worker.py")
        # Rank r on the (r mod n)-th CPU, as the engine tools (-B 2) and mpirun (MpiRunner) place
        # theirs (common.bind_argv): with 2 ranks on 2 cores no backend is measured with two
        # ranks sharing a core by chance, and with 4 every backend has two ranks per core, never
        # three on one by the scheduler's choice. pinned=False leaves placement to the scheduler
        # (gloo's best configuration at some sizes: best_of.py).
        for rank in range(world):
            log = open(os.path.join(logdir, f"{name}-w{world}-r{rank}.log"), "a")
            argv = [python, worker, backend, str(rank), str(world), init]
            prefix = launch(rank) if launch else bind_argv(rank) if pinned else []
            p = subprocess.Popen(prefix + argv,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                                 text=True, env=env)
            threading.Thread(target=_pump, args=(p, rank, self.replies), daemon=True).start()
            self.procs.append(p)
            self.logs.append(log)
        self._collect("start-up")

    def _collect(self, what):
        deadline = time.monotonic() + self.timeout
        got = {}
        while len(got) < self.world:
            left = deadline - time.monotonic()
            try:
                rank, msg = self.replies.get(timeout=max(left, 0.01))
            except queue.Empty:
                self.close()
                raise RunError(f"{self.backend} world {self.world}: {what} timed out after "
                               f"{self.timeout}s; ranks {sorted(set(range(self.world)) - set(got))}"
                               f" did not answer (logs: {self.logs[0].name} ...)")
            if msg is None:
                self.close()
                raise RunError(f"{self.backend} world {self.world}: rank {rank} exited during "
                               f"{what} (see {self.logs[rank].name})")
            got[rank] = msg
        return got

    def run(self, coll, dtype, sizes, iters, warmup, budget_ms=None, min_iters=None):
        """budget_ms: each size times min(iters, calls that fit in budget_ms by the warm-up's
        pace) calls, at least min_iters."""
        cmd = json.dumps({"coll": coll, "dtype": dtype, "sizes": sizes, "iters": iters,
                          "warmup": warmup, "budget_ms": budget_ms, "min_iters": min_iters})
        for p in self.procs:
            p.stdin.write(cmd + "\n")
            p.stdin.flush()
        got = self._collect(f"{coll} {dtype}")
        return got[0]

    def close(self):
        for p in self.procs:
            try:
                if p.poll() is None:
                    p.stdin.write(json.dumps({"quit": True}) + "\n")
                    p.stdin.flush()
            except OSError:
                pass
        deadline = time.monotonic() + 20
        for p in self.procs:
            try:
                p.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        for log in self.logs:
            log.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def _run(argv, timeout, what, env=None):
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RunError(f"{what}: timed out after {timeout}s: {' '.join(argv)}")
    if res.returncode != 0:
        raise RunError(f"{what}: exit {res.returncode}: {' '.join(argv)}\n{res.stderr[-2000:]}")
    return res.stdout


def build_mpi(bindir):
    """Compiles bench/mpi/mpi_coll_perf.c with mpicc; returns the binary or None (no mpicc)."""
    mpicc = shutil.which("mpicc")
    if not mpicc or not shutil.which("mpirun"):
        return None
    src = os.path.join(os.path.dirname(HERE), "mpi", "mpi_coll_perf.c")
    exe = os.path.join(bindir, "mpi_coll_perf")
    _run([mpicc, "-O2", "-std=c11", "-o", exe, src], 120, "mpicc")
    return exe


class MpiRunner:
    def __init__(self, exe, world, timeout):
        self.exe, self.world, self.timeout = exe, world, timeout

    def run(self, coll, dtype, sizes, iters, warmup):
        # Rank r bound to the (r mod n)-th CPU, as the engine tools' -B 2 and the torch workers
        # (common.bind_argv): hardware threads, since Open MPI's slots and "core" are physical
        # cores (on an SMT host a core binding would give each rank both of its threads).
        argv = ["mpirun", "--allow-run-as-root", "-np", str(self.world),
                "--use-hwthread-cpus", "--map-by", "hwthread:OVERSUBSCRIBE",
                "--bind-to", "hwthread:overload-allowed",
                "--mca", "pml", "ob1", "--mca", "btl", "self,vader"]
        if self.world > usable_cores():
            argv += ["--mca", "mpi_yield_when_idle", "1"]  # as smddp yields once oversubscribed
        argv += [self.exe, "-c", coll, "-d", dtype, "-s", ",".join(map(str, sizes)),
                 "-n", str(iters), "-w", str(warmup)]
        out = _run(argv, self.timeout, f"mpi {coll} {dtype} world {self.world}")
        rows = [json.loads(x) for x in out.splitlines() if x.startswith("{")]
        if len(rows) != len(sizes):
            raise RunError(f"mpi {coll} {dtype}: {len(rows)} rows for {len(sizes)} sizes")
        return {"rows": rows}


def perf_rows(doc, sizes, group):
    """The rows of a perf tool's -J document at `sizes`: {size, bytes, time_us, cpu_us, wrong},
    the time and CPU time of `group` ("in_place" or "out_of_place"; cpu_us None from a tool
    older than the field), the wrong elements of both groups. A collective of n equal blocks
    runs each size rounded down to a multiple of n elements (nccl-tests): a document with one
    row per size asked is matched in order, `size` the one asked and `bytes` the one run;
    otherwise rows are matched by exact size."""
    results, asked = doc["results"], sorted(sizes)
    ordered = len(results) == len(asked) and all(r["size"] <= s for r, s in zip(results, asked))
    rows = []
    for i, r in enumerate(results):
        size = asked[i] if ordered else r["size"]
        if size not in sizes:
            continue
        groups = [g for g in (r["in_place"], r["out_of_place"]) if g]  # null: no such form
        rows.append({"size": size, "bytes": r["size"], "time_us": r[group]["time_us"],
                     "cpu_us": r[group].get("cpu_us"),
                     "wrong": sum(g["wrong"] for g in groups if g["wrong"])})
    return rows


class EngineRunner:
    """smddp's engine-level perf tools; the group matching torch's call is taken: in place for
    all_reduce, broadcast and reduce, out of place for all_gather (torch's list form),
    reduce_scatter, gather, scatter, all_to_all and sendrecv (which have no other) and barrier;
    rooted collectives from rank 0. Run blocking (-z 1: each call waited for before the next), as the torch workers and
    MPI's blocking collectives call; the tools' default posts all iterations first (nccl-tests)."""

    def __init__(self, bench_dir, world, provider, factor, timeout):
        self.dir, self.world, self.provider = bench_dir, world, provider
        self.factor, self.timeout = factor, timeout

    def run(self, coll, dtype, sizes, iters, warmup):
        exe = os.path.join(self.dir, perf_tool(coll))
        fd, path = tempfile.mkstemp(prefix="smddp_engine_", suffix=".json")
        os.close(fd)
        argv = [exe, "-b", str(sizes[0]), "-e", str(sizes[-1]), "-f", str(self.factor),
                "-n", str(iters), "-w", str(warmup), "-c", "1", "-d", dtype,
                "-np", str(self.world), "-P", self.provider, "-z", "1", "-B", "2", "-J", path]
        if coll in ROOTED:
            argv += ["-r", "0"]
        try:
            _run(argv, self.timeout, f"engine {coll} {dtype} world {self.world}")
            with open(path) as f:
                doc = json.load(f)
        finally:
            os.unlink(path)
        group = "in_place" if coll in ("all_reduce", "broadcast", "reduce") else "out_of_place"
        rows = perf_rows(doc, sizes, group)
        for r in rows:
            r["count"] = element_count(coll, r["size"], self.world, dtype)
        if len(rows) != len(sizes):
            raise RunError(f"engine {coll} {dtype}: {len(rows)} rows for {len(sizes)} sizes")
        return {"rows": rows}
