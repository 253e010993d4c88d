# SPDX-License-Identifier: Apache-2.0
"""What the keep-training tests play around the workers (workers_keep_training.py): the store
that outlives them, the cluster manager that SIGKILLs the victims the plan names and brings up
a replacement when the job asks for one (a spare started ahead, told to join then), and the
referee that replays the applied schedule in one process.

Invariant: bounded; everything the cluster started is killed by the end, whatever happened.
"""
import faulthandler
import json
import multiprocessing as mp
import os
import signal
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist

import harness
import keep_training_model as km


def _child(wid, cfg, newcomer, limit_s):
    faulthandler.dump_traceback_later(max(limit_s - 5, 1), exit=True)
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the cluster's "where are you?"
    try:
        if newcomer:  # a spare: ready (torch imported, group made) before it is needed
            import torch_smddp  # noqa: F401

            store = dist.TCPStore(cfg["host"], cfg["port"], is_master=False,
                                  wait_for_workers=False, timeout=timedelta(seconds=limit_s))
            store.wait([f"go/{wid}"])
        import workers_keep_training

        workers_keep_training.main(wid, cfg, newcomer)
    except BaseException:
        with open(os.path.join(cfg["out"], f"{wid}.err"), "w") as f:
            f.write(traceback.format_exc())
        os._exit(1)


class Cluster:
    def __init__(self, backend, plan, steps, out, initial=4, timeout_s=60.0, settle_s=0.25,
                 limit_s=240.0, survivors=None):
        self.store = dist.TCPStore("127.0.0.1", harness.free_port(), is_master=True,
                                   wait_for_workers=False, timeout=timedelta(seconds=60))
        self.cfg = {"backend": backend, "plan": plan, "steps": steps, "initial": initial,
                    "host": "127.0.0.1", "port": self.store.port, "out": str(out),
                    "timeout_s": timeout_s, "settle_s": settle_s, "max_workers": 1024,
                    "survivors": survivors}
        self.limit_s = limit_s
        self.ctx = mp.get_context("spawn")
        self.procs = {}       # id -> Process
        self.victims = {e["victim"] for e in plan}
        self.next_id = initial

    def _start(self, wid, newcomer):
        p = self.ctx.Process(target=_child, args=(wid, self.cfg, newcomer, self.limit_s))
        p.start()
        self.procs[wid] = p

    def run(self):
        """Runs the plan; returns (results by id, errors by id, schedule, recoveries)."""
        errors, killed, replaced, admitted = {}, set(), set(), []
        deadline = time.monotonic() + self.limit_s
        try:
            for wid in range(self.cfg["initial"]):
                self._start(wid, newcomer=False)
            spare = self._spare()
            while time.monotonic() < deadline:
                for i, event in enumerate(self.cfg["plan"]):
                    if (event["mode"].startswith("sigkill") and i not in killed
                            and self.store.check([f"doomed/{i}"])):
                        os.kill(int(self.store.get(f"doomed/{i}")), signal.SIGKILL)
                        killed.add(i)
                admit = [e["admit"] for e in self.cfg["plan"] if "admit" in e]
                if (spare is not None and len(admitted) < len(admit)
                        and self.store.check([f"admit/{admit[len(admitted)]}"])):
                    admitted.append(spare)  # the job asks for its replacement: it joins now
                    self.store.set(f"go/{spare}", "1")
                    spare = self._spare()
                live = False
                for wid, p in list(self.procs.items()):
                    if p.exitcode is None:
                        live = live or not (spare is not None and wid == spare)
                        continue
                    if wid in self.victims and wid not in replaced:
                        replaced.add(wid)  # gone as planned
                    elif p.exitcode != 0 and wid not in self.victims and wid not in errors:
                        errors[wid] = self._error(wid, p.exitcode)
                if not live:
                    break
                time.sleep(0.01)
            else:
                for wid, p in self.procs.items():
                    if p.exitcode is None and wid != spare:
                        errors[wid] = f"worker {wid} still running after {self.limit_s} s"
                        os.kill(p.pid, signal.SIGUSR1)  # its stacks, on stderr
                time.sleep(1)
        finally:
            for p in self.procs.values():
                if p.is_alive():
                    p.kill()
                p.join(10)
        return self._results(), errors, self._schedule(), self._recoveries()

    def _spare(self):
        """Starts the next replacement ahead of need, when the plan has one left."""
        if self.next_id - self.cfg["initial"] >= sum(1 for e in self.cfg["plan"] if "admit" in e):
            return None
        wid, self.next_id = self.next_id, self.next_id + 1
        self._start(wid, newcomer=True)
        return wid

    def _error(self, wid, code):
        path = os.path.join(self.cfg["out"], f"{wid}.err")
        text = open(path).read() if os.path.exists(path) else ""
        return f"worker {wid} exited with {code}:\n{text}"

    def _results(self):
        out = {}
        for name in os.listdir(self.cfg["out"]):
            if name.endswith(".json"):
                with open(os.path.join(self.cfg["out"], name)) as f:
                    r = json.load(f)
                out[r["id"]] = r
        return out

    def _recoveries(self):
        """Per failure (the epoch its survivors entered): seconds from the first survivor's
        failed collective to the last survivor's first collective of the new generation."""
        epochs = int(self.store.add("quorum/smddp/quorum/epoch", 0))
        out = []
        for epoch in range(epochs):
            pairs = [json.loads(self.store.get(k)) for k in
                     (f"recovery/{epoch}/{w}" for w in range(self.next_id))
                     if self.store.check([k])]
            if pairs:
                out.append(max(r for _, r in pairs) - min(f for f, _ in pairs))
        return out

    def _schedule(self):
        steps = self.cfg["steps"]
        keys = [f"sched/{s}" for s in range(steps)]
        if not all(self.store.check([k]) for k in keys):
            return None
        return {s: json.loads(self.store.get(k)) for s, k in enumerate(keys)}


def check_against_replay(results, schedule, tolerance=1e-5):
    """Every finished worker's parameters equal the replay of `schedule`; returns the largest
    difference."""
    assert schedule is not None, "some step was never applied by a rank 0"
    reference = km.replay(schedule)
    worst = 0.0
    for wid, r in results.items():
        diff = (torch.tensor(r["params"], dtype=torch.float64) - reference).abs().max().item()
        assert diff <= tolerance, f"worker {wid}: parameters differ from the replay by {diff}"
        worst = max(worst, diff)
    return worst
