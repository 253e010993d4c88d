# SPDX-License-Identifier: Apache-2.0
"""bench/busy_ddp's runs and report: examples/train_ddp.py under torchrun, one backend after the
other, rotated each round, every rank with as many intra-op threads as there are usable cores
(OMP_NUM_THREADS and --threads: the compute competes with the communication for the CPUs, as in
a real job), optionally beside --load N busy processes per core (load.py) for the whole run.

A run's figures come from the RESULT line rank 0 prints (train_ddp.py: the epochs after the first,
samples/s, mean step time, CPU seconds); per backend the median over rounds is reported, and the
CPU time per step (the mean over ranks).
Invariant: every torchrun runs in a session of its own with a deadline; past it, or when this
tool is interrupted, the whole session is killed; a failed run makes the exit status non-zero.
"""
import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time

from .cli import _csv
from .common import usable_cores
from . import load as load_mod

RESULT = re.compile(r"RESULT (\{.*\})")


def parse_args(argv):
    cores = usable_cores()
    p = argparse.ArgumentParser(prog="bench/busy_ddp",
                                description="examples/train_ddp.py, smddp against gloo, on a "
                                            "busy machine")
    p.add_argument("--backends", type=_csv(tuple(VARIANTS)), default=["smddp", "gloo"],
                   help="smddp, gloo, smddp-spin20 (smddp with SMDDP_SPIN_US=20: a fixed 20 us "
                        "spin, then yields, whatever the load)")
    p.add_argument("--rounds", type=int, default=3, help="runs per backend; medians reported")
    p.add_argument("--load", type=float, default=0, metavar="N",
                   help="N busy processes per usable core beside the training (default 0)")
    p.add_argument("--nproc", type=int, default=2, help="ranks (torchrun --nproc_per_node)")
    p.add_argument("--threads", type=int, default=cores,
                   help=f"intra-op threads per rank (default: the usable cores, {cores})")
    p.add_argument("--width", type=int, default=128, help="train_ddp.py --width")
    p.add_argument("--blocks", type=int, default=4, help="train_ddp.py --blocks")
    p.add_argument("--batch", type=int, default=8, help="per-rank batch size")
    p.add_argument("--epochs", type=int, default=3, help="the first is warm-up, not reported")
    p.add_argument("--steps", type=int, default=4, help="steps per epoch")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--timeout", type=int, default=300, help="seconds per run")
    p.add_argument("--out", help="output directory (default: build-busy-ddp/ in the repo)")
    a = p.parse_args(argv)
    if a.load < 0 or a.rounds < 1 or a.threads < 1 or a.epochs < 1:
        p.error("--load >= 0, --rounds, --threads and --epochs >= 1")
    return a


# What each name runs: train_ddp.py's --backend and the environment it adds.
VARIANTS = {"smddp": ("smddp", {}), "gloo": ("gloo", {}),
            "smddp-spin20": ("smddp", {"SMDDP_SPIN_US": "20"})}


def train_argv(args, repo, name):
    backend = VARIANTS[name][0]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone",
            f"--nproc_per_node={args.nproc}", os.path.join(repo, "examples", "train_ddp.py"),
            "--backend", backend, "--epochs", str(args.epochs), "--steps", str(args.steps),
            "--batch", str(args.batch), "--lr", str(args.lr), "--width", str(args.width),
            "--blocks", str(args.blocks), "--threads", str(args.threads)]


def run_once(argv, env, timeout, log_path):
    """One torchrun in a session of its own, killed whole at the deadline or on any exception;
    returns the RESULT dict. Raises RuntimeError naming the log on a failure."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            rc = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            rc = None
        finally:
            if proc.poll() is None or rc is None:
                _kill_session(proc)
    text = open(log_path).read()
    if rc is None:
        raise RuntimeError(f"timed out after {timeout}s (log: {log_path})")
    found = RESULT.findall(text)
    if rc != 0 or not found:
        raise RuntimeError(f"exit {rc}{'' if found else ', no RESULT line'} (log: {log_path})"
                           f"\n{text[-1500:]}")
    return json.loads(found[-1])


def _kill_session(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait(10)


def summarize(runs, backends):
    """Per backend: medians over the rounds that finished."""
    out = {}
    for b in backends:
        ok = [r["result"] for r in runs if r["backend"] == b and r.get("result")]
        if not ok:
            out[b] = None
            continue
        out[b] = {"rounds": len(ok),
                  "samples_per_s": statistics.median(r["samples_per_s"] for r in ok),
                  "step_ms": statistics.median(r["step_ms"] for r in ok),
                  "cpu_ms_per_step": statistics.median(1e3 * r["cpu_s_mean"] / r["steps"]
                                                       for r in ok),
                  "samples_per_s_rounds": [r["samples_per_s"] for r in ok]}
    return out


def markdown(meta, summary):
    load = meta.get("load")
    head = ("quiet machine" if not load else
            f"busy machine: {load['per_core']:g} busy processes per core "
            f"({load['processes']} in all)")
    lines = [f"**examples/train_ddp.py, {meta['nproc']} ranks, {meta['threads']} intra-op "
             f"threads each, width {meta['width']}, {meta['blocks']} blocks, batch "
             f"{meta['batch']}/rank; {head}** (medians of {meta['rounds']} rounds; CPU: user + "
             "system per step, the mean over ranks)", "",
             "| backend | samples/s | step (ms) | CPU per step (ms) | rounds |",
             "|---|---|---|---|---|"]
    for b, s in summary.items():
        if s is None:
            lines.append(f"| {b} | failed | failed | failed | 0 |")
        else:
            lines.append(f"| {b} | {s['samples_per_s']:.1f} | {s['step_ms']:.1f} | "
                         f"{s['cpu_ms_per_step']:.1f} | {s['rounds']} |")
    a, b = summary.get("smddp"), summary.get("gloo")
    if a and b:
        lines += ["", f"smddp / gloo samples/s: {a['samples_per_s'] / b['samples_per_s']:.2f}"]
    return "\n".join(lines) + "\n"


def main(argv, repo):
    args = parse_args(argv)
    out = os.path.abspath(args.out or os.path.join(repo, "build-busy-ddp"))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    started = time.time()
    meta = {"arguments": argv, "nproc": args.nproc, "threads": args.threads,
            "width": args.width, "blocks": args.blocks, "batch": args.batch,
            "epochs": args.epochs, "steps": args.steps, "rounds": args.rounds,
            "cores": usable_cores(), "load_avg_start": os.getloadavg()}
    load = load_mod.BusyLoad(args.load, bound_s=args.timeout * args.rounds * 2 + 60)
    meta["load"] = None
    runs = []
    print(f"# bench/busy_ddp {' '.join(argv)}: {args.nproc} ranks x {args.threads} threads on "
          f"{meta['cores']} cores"
          + (f", {load.count} busy processes beside" if load.count else ""), flush=True)
    with load:
        meta["load"] = load.describe() if load.count else None
        for rnd in range(args.rounds):
            order = args.backends[rnd % len(args.backends):] + \
                args.backends[:rnd % len(args.backends)]
            for b in order:
                log = os.path.join(out, "logs", f"{b}-r{rnd + 1}.log")
                run = {"backend": b, "round": rnd + 1}
                try:
                    run["result"] = run_once(train_argv(args, repo, b),
                                             dict(env, **VARIANTS[b][1]), args.timeout, log)
                    r = run["result"]
                    print(f"# round {rnd + 1}/{args.rounds} {b:12s} {r['samples_per_s']:8.1f} "
                          f"samples/s  step {r['step_ms']:8.1f} ms  cpu {r['cpu_s_mean']:.2f} s",
                          flush=True)
                except RuntimeError as e:
                    run["error"] = str(e)
                    print(f"# ERROR {b} round {rnd + 1}: {e}", flush=True)
                runs.append(run)
        if load.count:
            meta["load"]["alive_at_end"] = load.alive()
    summary = summarize(runs, args.backends)
    meta["seconds"] = round(time.time() - started, 1)
    meta["load_avg_end"] = os.getloadavg()
    md = markdown(meta, summary)
    with open(os.path.join(out, "busy_ddp.json"), "w") as f:
        json.dump({"meta": meta, "runs": runs, "summary": summary}, f, indent=1)
    with open(os.path.join(out, "busy_ddp.md"), "w") as f:
        f.write(md)
    print("\n" + md)
    failed = [r for r in runs if "error" in r]
    print(f"# wrote {out}/busy_ddp.json, busy_ddp.md in {meta['seconds']} s; failed runs: "
          f"{len(failed)}{' FAILED' if failed else ' OK'}")
    return 1 if failed else 0
