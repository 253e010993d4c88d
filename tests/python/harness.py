# SPDX-License-Identifier: Apache-2.0
"""Spawned multi-process runner for the torch_smddp tests.

run(target, world, init, timeout, args) starts `world` processes (multiprocessing "spawn"), each
calling target(rank, world, init_method, *args) with init_method a FileStore ("file://...") or a
TCPStore ("tcp://127.0.0.1:port") rendezvous, and collects every rank's traceback.
Invariant: never hangs. Children dump their stacks and exit shortly before `timeout`
(faulthandler); the parent kills whatever is still alive at `timeout` and fails the test, naming
the ranks that did not finish.
"""
import faulthandler
import multiprocessing as mp
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


def _child(target, rank, world, init_method, timeout, args, results):
    faulthandler.dump_traceback_later(max(timeout - 5, 1), exit=True)
    try:
        import torch_smddp  # noqa: F401  (registers the backend in this process)

        target(rank, world, init_method, *args)
        results.put((rank, None))
    except BaseException:  # report everything, including SystemExit from a worker
        results.put((rank, traceback.format_exc()))
    finally:
        faulthandler.cancel_dump_traceback_later()


def run(target, world, init="file", timeout=120, args=()):
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="smddp_test_") as tmp:
        if init == "file":
            init_method = "file://" + os.path.join(tmp, "store")
        elif init == "tcp":
            init_method = f"tcp://127.0.0.1:{free_port()}"
        else:
            raise ValueError(init)
        procs = [
            ctx.Process(target=_child, args=(target, r, world, init_method, timeout, args, results))
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
