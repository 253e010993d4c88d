# SPDX-License-Identifier: Apache-2.0
"""Spawned multi-process runner for the torch_smddp tests.

run(target, world, init, timeout, args) starts `world` processes, each calling
target(rank, world, init_method, *args) with init_method a FileStore ("file://...") or a TCPStore
("tcp://127.0.0.1:port") rendezvous, and collects every rank's traceback.
Ranks are forked from a multiprocessing forkserver that has imported torch and torch_smddp once
(a fresh interpreter per rank spends seconds importing torch: most of this suite's time). Each rank
starts from the test's current environment; torch_smddp reads its configuration (SMDDP_*) and
libfabric its FI_* variables at first use, after that. When any other variable differs from the
server's (read at import: LD_*, OMP_*, TORCH_*, ...) the ranks are spawned fresh instead. A rank
runs the atexit hooks when its target returns, as an interpreter's exit does (forked processes
skip them otherwise).
Invariant: never hangs. Children dump their stacks and exit shortly before `timeout`
(faulthandler); the parent kills whatever is still alive at `timeout` and fails the test, naming
the ranks that did not finish.
"""
import atexit
import faulthandler
import multiprocessing as mp
import multiprocessing.forkserver
import os
import queue as queue_mod
import socket
import tempfile
import time
import traceback


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Variables read after the server's imports, at first use: these may differ per test. PYTEST_ is
# pytest's own bookkeeping (PYTEST_CURRENT_TEST changes with every test).
_LATE_PREFIXES = ("SMDDP_", "FI_", "PYTEST_", "MASTER_ADDR", "MASTER_PORT")
_PRELOAD = ["torch", "torch.distributed", "torch_smddp"]
_server_env = None


def _context():
    """The forkserver context, started on first use; spawn when an import-time variable changed."""
    global _server_env
    if _server_env is None:
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(_PRELOAD)
        _server_env = dict(os.environ)
        multiprocessing.forkserver.ensure_running()
    keys = set(os.environ) | set(_server_env)
    if any(os.environ.get(k) != _server_env.get(k) for k in keys if not k.startswith(_LATE_PREFIXES)):
        return mp.get_context("spawn")
    return mp.get_context("forkserver")


def _child(target, rank, world, init_method, timeout, args, results, env):
    faulthandler.dump_traceback_later(max(timeout - 5, 1), exit=True)
    os.environ.clear()
    os.environ.update(env)
    try:
        import torch_smddp  # noqa: F401  (registers the backend in this process)

        target(rank, world, init_method, *args)
        results.put((rank, None))
    except BaseException:  # report everything, including SystemExit from a worker
        results.put((rank, traceback.format_exc()))
    finally:
        atexit._run_exitfuncs()  # torch_smddp's hook shuts down groups still alive
        faulthandler.cancel_dump_traceback_later()


def run(target, world, init="file", timeout=120, args=()):
    ctx = _context()
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="smddp_test_") as tmp:
        if init == "file":
            init_method = "file://" + os.path.join(tmp, "store")
        elif init == "tcp":
            init_method = f"tcp://127.0.0.1:{free_port()}"
        else:
            raise ValueError(init)
        procs = [
            ctx.Process(target=_child, args=(target, r, world, init_method, timeout, args, results,
                                               dict(os.environ)))
            for r in range(world)
        ]
        for p in procs:
            p.start()
        deadline = time.monotonic() + timeout
        errors = {}
        while len(errors) < world and time.monotonic() < deadline:
            try:
                rank, err = results.get(timeout=0.5)
                errors[rank] = err
            except queue_mod.Empty:
                dead = [p for p in procs if p.exitcode not in (None, 0)]
                if dead and len(errors) + len(dead) >= world:
                    time.sleep(0.5)  # let a dying rank's report arrive
                    while True:
                        try:
                            rank, err = results.get_nowait()
                            errors[rank] = err
                        except queue_mod.Empty:
                            break
                    break
        for p in procs:
            p.join(max(0.0, min(10.0, deadline - time.monotonic())))
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join(5)
    missing = sorted(set(range(world)) - set(errors))
    failed = {r: e for r, e in errors.items() if e}
    lines = []
    for r, e in sorted(failed.items()):
        lines.append(f"--- rank {r} of {world} failed:\n{e}")
    if missing:
        codes = {r: procs[r].exitcode for r in missing}
        lines.append(
            f"ranks {missing} of {world} did not finish within {timeout}s (exit codes {codes})"
        )
    if lines:
        raise AssertionError("\n".join(lines))
