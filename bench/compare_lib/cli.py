# SPDX-License-Identifier: Apache-2.0
"""Flags and the interleaved run loop of bench/compare (the script itself only finds an
interpreter that sees torch_smddp and calls main()).

Order of work, per world size: start the torch groups (smddp, gloo) once; then for each round,
collective and dtype run every backend's sweep back to back, the backend order rotated by one
each round, so slow phases of a noisy machine are shared out. Medians over rounds are reported.
With --load N, N busy processes per usable core (load.py) spin from before the first world's
groups start until the last sweep is done; the limits are measured before, on the quiet machine.
Invariant: every cell (world, collective, dtype, backend) ends in exactly one status: ok, n/a,
skipped or error; the exit status is 0 only when no cell is in error and no element is wrong.
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

from . import best_of
from . import limits as limits_mod
from . import load as load_mod
from . import placement
from . import report
from .common import (BACKENDS, COLLECTIVES, CUDA_BACKENDS, ELEM_SIZE, parse_bytes, perf_tool,
                     size_ladder, sweep_sizes, usable_cores, worker_env)
from .runners import EngineRunner, MpiRunner, RunError, TorchGroup, build_mpi


def _csv(allowed):
    def parse(text):
        items = [t.strip() for t in text.split(",") if t.strip()]
        bad = [t for t in items if allowed and t not in allowed]
        if bad or not items:
            raise argparse.ArgumentTypeError(f"{text!r}: expected a comma list of {allowed}")
        return items
    return parse


def parse_args(argv):
    p = argparse.ArgumentParser(prog="bench/compare", description=__doc__.splitlines()[0])
    p.add_argument("--min", type=parse_bytes, default=8, help="smallest size (default 8)")
    p.add_argument("--max", type=parse_bytes, default=64 << 20, help="largest size (default 64M)")
    p.add_argument("--factor", type=int, default=4, help="sizes are max/factor^k >= min")
    p.add_argument("--iters", type=int, default=20, help="timed calls per size above --mid-max")
    p.add_argument("--small-iters", type=int, default=10000,
                   help="timed calls per size up to --small-max (default 10000; the torch "
                        "backends fewer when that would take over --budget-ms, never fewer "
                        "than --iters)")
    p.add_argument("--small-max", type=parse_bytes, default=64 << 10,
                   help="largest size timed with --small-iters (default 64K)")
    p.add_argument("--mid-iters", type=int, default=200,
                   help="timed calls per size above --small-max up to --mid-max (default 200; "
                        "the torch backends fewer when that would take over --budget-ms, never "
                        "fewer than --iters)")
    p.add_argument("--mid-max", type=parse_bytes, default=4 << 20,
                   help="largest size timed with --mid-iters (default 4M)")
    p.add_argument("--budget-ms", type=float, default=50.0,
                   help="torch backends: time one size's loop may take in the small and mid "
                        "bands (default 50)")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--rounds", type=int, default=3, help="repetitions; medians are reported")
    p.add_argument("--worlds", type=_csv(None), default=["2", "4"])
    p.add_argument("--dtypes", type=_csv(tuple(ELEM_SIZE)), default=["float32", "bfloat16"])
    p.add_argument("--collectives", type=_csv(COLLECTIVES), default=list(COLLECTIVES))
    p.add_argument("--backends", type=_csv(BACKENDS + CUDA_BACKENDS), default=list(BACKENDS))
    p.add_argument("--gloo-pinned-only", action="store_true",
                   help="run gloo pinned only (default: pinned and unpinned, the faster per "
                        "size is gloo's figure: compare_lib/best_of.py)")
    p.add_argument("--provider", default="shm", help="libfabric provider for smddp (shm|tcp)")
    p.add_argument("--engine-dir", help="directory of the *_perf tools (default: build*/bench)")
    p.add_argument("--timeout", type=int, default=900, help="seconds per sweep")
    p.add_argument("--no-limits", action="store_true", help="skip the limit measurements")
    p.add_argument("--load", type=float, default=0, metavar="N",
                   help="busy machine: N plain busy-loop processes per usable core (unbound, "
                        "niceness 0) spin during every timed sweep; the limits are measured "
                        "before they start (default 0: a quiet machine)")
    p.add_argument("--load-bound", type=int, default=4 * 3600, metavar="S",
                   help="with --load: the busy processes end themselves after S seconds even "
                        "if this tool cannot kill them (default 4 h)")
    p.add_argument("--out", help="output directory (default: build-compare/ in the repo)")
    p.add_argument("--quick", action="store_true",
                   help="CI smoke: 8 B-64 KiB, world 2, iters 3, one round")
    a = p.parse_args(argv)
    if a.quick:
        a.min, a.max, a.iters, a.warmup, a.rounds, a.worlds = 8, 64 << 10, 3, 1, 1, ["2"]
        a.small_iters = a.mid_iters = 3
    a.worlds = [int(w) for w in a.worlds]
    if a.load < 0:
        p.error("--load: a number of busy processes per core >= 0")
    return a


def find_engine_dir(repo, given):
    names = [perf_tool(c) for c in COLLECTIVES]
    cands = [given] if given else [os.path.join(repo, "build", "bench")] + sorted(
        glob.glob(os.path.join(repo, "build*", "bench")))
    for d in cands:
        if d and all(os.access(os.path.join(d, n), os.X_OK) for n in names):
            return d
    return None


class Backends:
    """The runners of one world size, plus why a backend is skipped here."""

    def __init__(self, args, repo, world, outdir, mpi_exe):
        self.runners, self.skipped = {}, {}
        self.order = best_of.run_order(args.backends, not args.gloo_pinned_only)
        env = worker_env(args.provider)
        for b in self.order:
            if b in CUDA_BACKENDS and not _gpus():
                self.skipped[b] = ("skipped", "no GPU visible (torch.cuda.is_available() is "
                                   "False)")
            elif b in CUDA_BACKENDS:
                print(f"# starting {world} torch.distributed ranks on CUDA tensors: {b}",
                      flush=True)
                try:
                    self.runners[b] = TorchGroup(sys.executable, b, world,
                                                 dict(env, NCCL_MULTI_RANK_GPU_ENABLE="1"),
                                                 os.path.join(outdir, "logs"), args.timeout,
                                                 pinned=True, name=b)
                except RunError as e:
                    self.skipped[b] = ("error", str(e))
            elif b in ("smddp", "smddp-alloc", "gloo", best_of.UNPINNED):
                torch_backend, pinned = ("gloo", False) if b == best_of.UNPINNED else (b, True)
                print(f"# starting {world} torch.distributed ranks with backend {torch_backend}"
                      f"{'' if pinned else ' (unpinned)'}", flush=True)
                try:
                    self.runners[b] = TorchGroup(sys.executable, torch_backend, world, env,
                                                 os.path.join(outdir, "logs"), args.timeout,
                                                 pinned=pinned, name=b)
                except RunError as e:
                    self.skipped[b] = ("error", str(e))
            elif b == "mpi":
                if mpi_exe:
                    self.runners[b] = MpiRunner(mpi_exe, world, args.timeout)
                else:
                    self.skipped[b] = ("skipped", "mpirun/mpicc not found (apt-get install "
                                       "openmpi-bin libopenmpi-dev)")
            elif b == "engine":
                d = find_engine_dir(repo, args.engine_dir)
                if d:
                    self.runners[b] = EngineRunner(d, world, args.provider, args.factor,
                                                   args.timeout)
                else:
                    self.skipped[b] = ("skipped", "engine perf tools not built (cmake --build "
                                       "build, or --engine-dir)")

    def close(self):
        for r in self.runners.values():
            if isinstance(r, TorchGroup):
                r.close()


def _gpus():
    """GPUs this machine's torch sees (0 without one, or with a CPU-only torch)."""
    try:
        import torch
        return torch.cuda.device_count() if torch.cuda.is_available() else 0
    except ImportError:
        return 0


def _cell(world, coll, dtype, backend, status="ok", reason=""):
    cores = usable_cores()
    return {"world": world, "collective": coll, "dtype": dtype, "backend": backend,
            "status": status, "reason": reason, "rounds": [], "placement_ns": [], "rows": [],
            "cores": cores, "oversubscribed": world > cores}


def _dtypes(args, coll):
    """Barrier moves no data: it runs once, under the first dtype's name."""
    return args.dtypes[:1] if coll == "barrier" else args.dtypes


def run_world(args, world, sizes, bk, cells, probe):
    """All rounds for one world size; fills `cells` keyed by (world, coll, dtype, backend). Each
    round of a cell is bracketed by two placement probes (placement.py)."""
    order = list(bk.order)
    for coll in args.collectives:
        for dtype in _dtypes(args, coll):
            for b in order:
                st = bk.skipped.get(b)
                cells[(world, coll, dtype, b)] = _cell(world, coll, dtype, b, *(st or ()))
    for rnd in range(args.rounds):
        rot = order[rnd % len(order):] + order[:rnd % len(order)]
        for coll in args.collectives:
            for dtype in _dtypes(args, coll):
                for b in rot:
                    cell = cells[(world, coll, dtype, b)]
                    if cell["status"] != "ok":
                        continue
                    before = probe.sample()
                    t0 = time.monotonic()
                    try:
                        res = _run_bands(bk.runners[b], coll, dtype, sweep_sizes(coll, sizes),
                                         args)
                    except RunError as e:
                        cell.update(status="error", reason=str(e))
                        print(f"# ERROR {b} {coll} {dtype} world {world}: {e}", flush=True)
                        continue
                    if "unsupported" in res:
                        cell.update(status="n/a", reason=res["unsupported"])
                        continue
                    spent = time.monotonic() - t0
                    cell["rounds"].append(res["rows"])
                    cell["placement_ns"].append([before, probe.sample()])
                    print(f"# round {rnd + 1}/{args.rounds} world {world} {coll:10s} "
                          f"{dtype:8s} {b:6s} {spent:6.1f}s", flush=True)


def bands(args):
    """(largest size, timed calls) per band, smallest first; a band never times fewer calls
    than --iters."""
    return [(args.small_max, max(args.small_iters, args.iters)),
            (max(args.mid_max, args.small_max), max(args.mid_iters, args.iters)),
            (None, args.iters)]


def _run_bands(runner, coll, dtype, sizes, args):
    """One sweep in three bands: sizes up to --small-max with --small-iters calls (a few us
    each: 1000 calls time a fraction of a millisecond, which measures the tool's first moments
    and the phase of the scheduler's time slices more than the collective), up to --mid-max with
    --mid-iters (20 calls of a 1 MiB collective are 0.6 ms: one interruption moves the row by
    10 %), larger sizes with --iters. The torch backends cap the first two bands at --budget-ms
    per size (gloo takes ms per call there). A band the backend rejects ("unsupported", a dtype
    check that does not depend on the size) answers for the whole sweep."""
    rows = []
    lower = -1
    for upper, iters in bands(args):
        band = [s for s in sizes if s > lower and (upper is None or s <= upper)]
        lower = upper
        if not band:
            continue
        extra = {}
        if isinstance(runner, TorchGroup) and iters > args.iters:
            extra = {"budget_ms": args.budget_ms, "min_iters": args.iters}
        res = runner.run(coll, dtype, band, iters, args.warmup, **extra)
        if "unsupported" in res:
            return res
        rows += res["rows"]
    return {"rows": rows}


def _machine():
    model = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines()
                      if ln.startswith("Model name")), "")
    except (OSError, subprocess.SubprocessError):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / (1 << 30)
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(mem, 1),
            "host": platform.node(), "python": sys.executable,
            "load_avg_start": os.getloadavg()}


def load_header(load_meta):
    """summary.md's first lines on a busy machine (nothing on a quiet one)."""
    if not load_meta:
        return ""
    n, alive = load_meta["processes"], load_meta.get("alive_at_end", load_meta["processes"])
    early = "" if alive == n else f"; only {alive} still ran at the end (--load-bound)"
    return (f"**busy machine: {load_meta['per_core']:g} busy processes per core ({n} in all)**"
            f" on {load_meta['cores']} usable cores, unbound, niceness {load_meta['niceness']}"
            f"{early}. The limits, where measured, were measured before they started (a quiet "
            "machine). \"cpu us\": CPU time (user + system) per call, the mean over ranks.\n\n")


def print_tables(cells, args):
    groups = {}
    for c in cells:
        groups.setdefault((c["world"], c["collective"], c["dtype"]), []).append(c)
    md = []
    for key in sorted(groups, key=lambda k: (k[0], args.collectives.index(k[1]),
                                            args.dtypes.index(k[2]))):
        group = groups[key]
        print()
        for c in group:
            print(report.backend_table(c))
        if any(c["backend"] == "smddp" and c["rows"] for c in group):
            print(report.ratio_table(group))
        md.append(report.markdown_group(group, args.backends, cpu=args.load > 0))
    return "\n".join(md)


def main(argv, repo):
    args = parse_args(argv)
    out = os.path.abspath(args.out or os.path.join(repo, "build-compare"))
    bindir = os.path.join(out, "bin")
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    os.makedirs(bindir, exist_ok=True)
    started = time.time()
    sizes = size_ladder(args.min, args.max, args.factor)
    meta = {"machine": _machine(), "arguments": argv, "sizes": sizes, "iters": args.iters,
            "bands": [{"max": m, "iters": n} for m, n in bands(args)],
            "budget_ms": args.budget_ms, "warmup": args.warmup,
            "rounds": args.rounds, "provider": args.provider}
    print(f"# bench/compare {' '.join(argv)}\n# machine: {json.dumps(meta['machine'])}\n"
          f"# sizes: {sizes}", flush=True)
    lim = {"skipped": "--no-limits"} if args.no_limits else limits_mod.measure(bindir, args.quick)
    if not args.no_limits:
        print(limits_mod.format_limits(lim), flush=True)
    memcpy = lim.get("memory", {}).get("memcpy_gbps")
    mpi_exe = build_mpi(bindir) if "mpi" in args.backends else None
    probe = placement.PlacementProbe(bindir)
    cells = {}
    load = load_mod.BusyLoad(args.load, args.load_bound)
    meta["load"] = None
    with load:
        if load.count:
            meta["load"] = load.describe()
            print(f"# busy machine: {args.load:g} busy processes per core ({load.count} in all)",
                  flush=True)
        for world in args.worlds:
            bk = Backends(args, repo, world, out, mpi_exe)
            try:
                run_world(args, world, sizes, bk, cells, probe)
            finally:
                bk.close()
        if load.count:
            meta["load"]["alive_at_end"] = load.alive()
    far = placement.threshold(cells.values())
    cells = [report.finalize(c, memcpy, placement.far_rounds(c, far)) for c in cells.values()]
    cells = best_of.merge(cells)
    md = load_header(meta["load"]) + print_tables(cells, args)
    placed = placement.markdown(cells)
    print("\n" + placed)
    md += "\n" + placed
    return finish(args, out, meta, lim, cells, md, started)


def finish(args, out, meta, lim, cells, md, started):
    skipped = sorted({(c["backend"], c["reason"]) for c in cells if c["status"] == "skipped"})
    for b, why in skipped:
        print(f"# SKIPPED backend {b}: {why}")
    errors = [c for c in cells if c["status"] == "error"]
    wrong = report.wrong_total(cells)
    meta["machine"]["load_avg_end"] = os.getloadavg()
    meta["seconds"] = round(time.time() - started, 1)
    doc = {"meta": meta, "limits": lim, "cells": cells}
    with open(os.path.join(out, "compare.json"), "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(md)
    try:
        from . import plot  # matplotlib: only the picture depends on it

        plot.write_png(os.path.join(out, "busbw.png"),
                       [c for c in cells if c["backend"] not in best_of.CONFIG],
                       args.collectives, args.worlds,
                       lim.get("memory", {}).get("memcpy_gbps"))
    except Exception as e:  # a plotting problem must not hide the measurements
        print(f"# WARNING: busbw.png not written: {e}")
    pngs = "busbw.png"
    if meta.get("load"):
        try:
            from . import plot

            plot.write_busy_png(os.path.join(out, "busy.png"),
                                [c for c in cells if c["backend"] not in best_of.CONFIG],
                                args.collectives, args.worlds, meta["load"])
            pngs += ", busy.png"
        except Exception as e:
            print(f"# WARNING: busy.png not written: {e}")
    print(f"# wrote {out}/compare.json, summary.md, {pngs} in {meta['seconds']} s")
    print(f"# wrong elements: {wrong}; failed cells: {len(errors)}"
          f"{' FAILED' if wrong or errors else ' OK'}")
    return 1 if wrong or errors else 0
