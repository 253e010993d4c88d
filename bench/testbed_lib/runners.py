# SPDX-License-Identifier: Apache-2.0
"""The backends bench/testbed runs across namespace hosts (tests/netns/hosts.sh), one collective
(all_reduce, broadcast, all_gather, reduce_scatter or all_to_all; bench/compare's shapes), each
returning rows {size, time_us, wrong} for the sizes asked:

- smddp's engine (build/bench/<collective>_perf, one process per rank started inside its host,
  rendezvous through a TCP store on host a; -z 1: each call waited for, as a training loop
  does), with its defaults (hierarchical across hosts, libfabric's net provider between them),
  over tcp;ofi_rxm instead (SMDDP_PROVIDER=tcp), or flat (SMDDP_ARENA=0: no host arenas, the
  flat ring / recursive doubling over the network between all ranks);
- gloo through torch.distributed (bench/compare_lib/torch_worker.py in each host, TCP init on
  host a; gloo finds its interface from the host name);
- Open MPI (bench/mpi/mpi_coll_perf.c) under mpirun started in host a, the other hosts' daemons
  started through an rsh agent that enters their namespace; btl self,vader,tcp (shared memory
  within a host, TCP between hosts, its best configuration here), yielding when oversubscribed.

Placement (`cores`): "host" (the default) runs each host's processes on one CPU of its own, host
h on CPU h mod the CPUs this process may use (`taskset`; Open MPI `--bind-to none` inside it), as
hosts do not share CPUs; "free" leaves every process to the scheduler.

Invariant: every process has a deadline and is killed past it; the namespaces are the caller's.
"""
import json
import os
import subprocess
import tempfile
import time

from compare_lib.common import perf_tool
from compare_lib.runners import RunError, TorchGroup, perf_rows

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(BENCH)
HOSTS_SH = os.path.join(REPO, "tests", "netns", "hosts.sh")
LETTERS = "abcd"


def counts_of(hosts, per_host):
    """Ranks on each host: one count for every host, or a list of one per host (3,2,1)."""
    return list(per_host) if isinstance(per_host, (list, tuple)) else [per_host] * hosts


def rank_hosts(hosts, per_host):
    """Each rank's host letter, a host's ranks consecutive (as launchers number them)."""
    return [LETTERS[h] for h, c in enumerate(counts_of(hosts, per_host)) for _ in range(c)]


def addr_of(letter):
    return f"192.0.2.{101 + LETTERS.index(letter)}"


def pin_of(letter, cores):
    """The command prefix that puts host `letter`'s processes on its CPU ([] for "free")."""
    if cores == "free":
        return []
    cpus = sorted(os.sched_getaffinity(0))
    return ["taskset", "-c", str(cpus[LETTERS.index(letter) % len(cpus)])]


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
        p.wait(10)


class EngineRunner:
    def __init__(self, tag, hosts, per_host, build_dir, logdir, timeout, flat=False, port=29820,
                 provider=None, collective="all_reduce", cores="host"):
        self.tag, self.hosts, self.per_host = tag, hosts, per_host
        self.collective, self.cores = collective, cores
        self.exe = os.path.join(build_dir, "bench", perf_tool(collective))
        self.logdir, self.timeout, self.flat, self.port = logdir, timeout, flat, port
        self.provider = provider  # SMDDP_PROVIDER; None: smddp's choice
        if not os.path.exists(self.exe):
            raise RunError(f"{self.exe} not built")

    def run(self, sizes, iters, warmup):
        where = rank_hosts(self.hosts, self.per_host)
        world = len(where)
        self.port += 1
        fd, path = tempfile.mkstemp(prefix="smddp_testbed_", suffix=".json")
        os.close(fd)
        procs = []
        factor = sizes[1] // sizes[0] if len(sizes) > 1 else 2
        try:
            for rank in range(world):
                h = where[rank]
                # --cores host: smddp sees its host's one CPU (the affinity mask) and picks
                # SMDDP_SPIN_US=0 itself. --cores free: the machine's CPUs carry every host's
                # ranks, which no host can see, so 0 is set. Open MPI yields when idle too.
                env = dict(os.environ, SMDDP_RANK=str(rank), SMDDP_WORLD_SIZE=str(world),
                           SMDDP_STORE=f"tcp:{addr_of('a')}:{self.port}",
                           SMDDP_FABRIC_ADDR=addr_of(h), SMDDP_DEBUG="WARN",
                           SMDDP_TIMEOUT_MS=str(int(self.timeout * 1000)))
                if self.cores == "free":
                    env.setdefault("SMDDP_SPIN_US", "0")
                if self.flat:  # the flat algorithms' own choice: an SMDDP_ALGO is smddp's
                    env["SMDDP_ARENA"] = "0"
                    env.pop("SMDDP_ALGO", None)
                if self.provider:
                    env["SMDDP_PROVIDER"] = self.provider
                argv = [HOSTS_SH, "exec", self.tag, h] + pin_of(h, self.cores) + [
                        self.exe, "-b", str(sizes[0]),
                        "-e", str(sizes[-1]), "-f", str(factor), "-n", str(iters),
                        "-w", str(warmup), "-c", "1", "-z", "1", "-d", "float"]
                if rank == 0:
                    argv += ["-J", path]
                log = open(os.path.join(self.logdir, f"{self.collective}-engine"
                                        f"{'-flat' if self.flat else ''}"
                                        f"{'-' + self.provider if self.provider else ''}"
                                        f"-r{rank}.log"), "a")
                procs.append(subprocess.Popen(argv, env=env, stdout=log, stderr=log))
            deadline = time.monotonic() + self.timeout
            for p in procs:
                try:
                    code = p.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    raise RunError(f"engine sweep timed out after {self.timeout}s "
                                   f"(logs in {self.logdir})")
                if code != 0:
                    raise RunError(f"engine rank exited {code} (logs in {self.logdir})")
            with open(path) as f:
                doc = json.load(f)
        finally:
            _kill(procs)
            os.unlink(path)
        # As torch calls them: all_reduce and broadcast in place, the others out of place.
        inplace = self.collective in ("all_reduce", "broadcast")
        return perf_rows(doc, sizes, "in_place" if inplace else "out_of_place")


class TorchRunner:
    """A torch process group of `backend` (gloo, or smddp through torch_smddp) across the
    namespace hosts, each rank pinned as the engine tools are."""

    def __init__(self, tag, hosts, per_host, python, logdir, timeout, port=29860,
                 collective="all_reduce", cores="host", backend="gloo"):
        where = rank_hosts(hosts, per_host)
        world = len(where)
        self.collective = collective
        env = dict(os.environ, PYTHONPATH=BENCH, SMDDP_DEBUG="WARN",
                   SMDDP_TIMEOUT_MS=str(int(timeout * 1000)))

        def launch(rank):
            h = where[rank]
            return [HOSTS_SH, "exec", tag, h] + pin_of(h, cores)

        self.group = TorchGroup(python, backend, world, env, logdir, timeout,
                                init=f"tcp://{addr_of('a')}:{port}", launch=launch,
                                name=f"{backend}-torch")

    def run(self, sizes, iters, warmup):
        reply = self.group.run(self.collective, "float32", sizes, iters, warmup)
        if "unsupported" in reply:
            raise RunError(reply["unsupported"])
        keep = ("size", "time_us", "wrong", "estimate_us")  # estimate_us: smddp's, when asked
        return [{k: r[k] for k in keep if k in r} for r in reply["rows"]]

    def close(self):
        self.group.close()


class MpiRunner:
    def __init__(self, tag, hosts, per_host, exe, workdir, timeout, collective="all_reduce",
                 cores="host"):
        self.tag, self.hosts, self.per_host, self.exe = tag, hosts, per_host, exe
        self.collective, self.cores = collective, cores
        self.timeout = timeout
        self.agent = os.path.join(workdir, "mpi_agent")
        with open(self.agent, "w") as f:  # "agent HOST CMD...": CMD inside host HOST (nodeX)
            f.write('#!/bin/sh\nhost=$1; shift\ncase "${host#node}" in\n')
            for h in LETTERS[:hosts]:
                f.write(f'  {h}) pin="{" ".join(pin_of(h, cores))}";;\n')
            f.write(f'esac\nexec "{HOSTS_SH}" exec {tag} "${{host#node}}" $pin sh -c "$*"\n')
        os.chmod(self.agent, 0o755)
        self.hostfile = os.path.join(workdir, "mpi_hosts")
        with open(self.hostfile, "w") as f:
            for h, count in zip(LETTERS, counts_of(hosts, per_host)):
                f.write(f"node{h} slots={count}\n")

    def run(self, sizes, iters, warmup):
        world = sum(counts_of(self.hosts, self.per_host))
        bind = ["--bind-to", "none"] if self.cores == "host" else []
        argv = [HOSTS_SH, "exec", self.tag, "a"] + pin_of("a", self.cores) + [
                "mpirun", "--allow-run-as-root", "-np",
                str(world), "--hostfile", self.hostfile, "--map-by", "slot"] + bind + [
                "--mca", "plm_rsh_agent", self.agent, "--mca", "pml", "ob1",
                "--mca", "btl", "self,vader,tcp", "--mca", "btl_tcp_if_include", "192.0.2.0/24",
                "--mca", "oob_tcp_if_include", "192.0.2.0/24",
                "--mca", "mpi_yield_when_idle", "1",
                self.exe, "-c", self.collective, "-d", "float32", "-s", ",".join(map(str, sizes)),
                "-n", str(iters), "-w", str(warmup)]
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=self.timeout)
        except subprocess.TimeoutExpired:
            raise RunError(f"mpi sweep timed out after {self.timeout}s")
        if res.returncode != 0:
            raise RunError(f"mpirun exit {res.returncode}: {res.stderr[-2000:]}")
        rows = [json.loads(x) for x in res.stdout.splitlines() if x.startswith("{")]
        if len(rows) != len(sizes):
            raise RunError(f"mpi: {len(rows)} rows for {len(sizes)} sizes")
        return [{"size": r["size"], "time_us": r["time_us"], "wrong": r["wrong"]} for r in rows]
