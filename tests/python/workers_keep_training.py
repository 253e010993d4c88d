# SPDX-License-Identifier: Apache-2.0
"""One training worker of the keep-training tests (test_keep_training.py runs them).

Every step: each member computes its gradient on batch(step, its id), the members all_reduce
the sum (one float64 buffer, plus one element in which rank 0 says how many replacements wait
to be admitted) and apply the mean. The plan says which worker dies at which step and how:
  exit_before     os._exit before its all_reduce        sigkill_before  SIGKILLed from outside
  exit_during     os._exit right after posting it       sigkill_during  (by the test) there
A member whose collective fails reconfigures with the other survivors (StoreQuorum: agreed
through the store), rolls back to the step the slowest survivor was at and redoes it; one that
noticed too late for that quorum comes back as a newcomer. At a
plan's "admit" step rank 0 asks the cluster for the replacement and the members wait for it and
reconfigure with it; after every reconfigure rank 0 broadcasts (step, parameters), which is how a newcomer gets
them. Rank 0 records in the store which workers applied each step (the replay schedule).
Results (final parameters, resource samples) go to <out>/<id>.json; each survivor's recovery
(wall times of its failed collective and of its new generation's first) to the store.
"""
import json
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist

import keep_training_model as km
from torch_smddp.elastic import QuorumError, StoreQuorum


def _resources():
    with open("/proc/self/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    return {"fds": len(os.listdir("/proc/self/fd")),
            "threads": len(os.listdir("/proc/self/task")), "rss_mib": rss}


class Worker:
    def __init__(self, wid, cfg):
        self.wid, self.cfg = wid, cfg
        timeout = timedelta(seconds=cfg["timeout_s"])
        self.store = dist.TCPStore(cfg["host"], cfg["port"], is_master=False,
                                   wait_for_workers=False, timeout=timedelta(seconds=60))
        dist.init_process_group(cfg["backend"], store=dist.PrefixStore("pg", self.store),
                                rank=wid, world_size=cfg["max_workers"], timeout=timeout,
                                enable_reconfigure=True)
        self.quorum = StoreQuorum(dist.PrefixStore("quorum", self.store), settle=cfg["settle_s"],
                                  timeout=60)
        self.model = km.make_model()
        self.snapshots = {}
        self.gen = None
        self.step = 0
        self.samples = {}     # epoch -> resources once in it

    def victim_of(self, step):
        for i, event in enumerate(self.cfg["plan"]):
            if event["kill"] == step and event["victim"] == self.wid:
                return i, event["mode"]
        return None, None

    def admits_by(self, step):
        """Replacements the plan admits up to `step` (in the group from that step on)."""
        return sum(1 for e in self.cfg["plan"] if "admit" in e and e["admit"] <= step)

    def enter(self, generation, failed_at=None):
        """After a reconfigure: agree on the step to go on from, take rank 0's state."""
        self.gen = generation
        steps = [info["step"] for info in generation.infos if "step" in info]
        state = torch.zeros(1 + km.flat_params(self.model).numel(), dtype=torch.float64)
        if generation.rank == 0:
            if steps:  # back to where the slowest survivor was
                self.step = min(steps)
                km.load_flat(self.model, self.snapshots[self.step])
            state[0] = self.step
            state[1:] = km.flat_params(self.model)
        dist.broadcast(state, src=0)
        if failed_at is not None:  # for the test, which also counts the ones who die later
            self.store.set(f"recovery/{generation.epoch}/{self.wid}",
                           json.dumps([failed_at, time.time()]))
        self.step = int(state[0].item())
        km.load_flat(self.model, state[1:])
        self.samples[generation.epoch] = _resources()

    def ids(self):
        return [info["id"] for info in self.gen.infos]

    def die(self, event, mode, buf):
        if mode.endswith("during"):
            dist.all_reduce(buf, async_op=True)  # posted; this process dies while it runs
        if mode.startswith("exit"):
            os._exit(3)
        self.store.set(f"doomed/{event}", str(os.getpid()))  # the test SIGKILLs it now
        time.sleep(600)

    def train_step(self):
        step = self.step
        self.snapshots = {s: p for s, p in self.snapshots.items() if s >= step - 1}
        self.snapshots[step] = km.flat_params(self.model)
        # The plan's replacements for the next step, unless a failure's quorum took them in
        # already: rank 0 asks the cluster, every member waits for them (a member that lagged
        # behind the others would notice a failure late).
        want = self.admits_by(step + 1) - self.quorum.admitted()
        if want > 0 and self.cfg["plan"] and any(e.get("admit") == step + 1
                                                 for e in self.cfg["plan"]):
            if self.gen.rank == 0:
                self.store.set(f"admit/{step + 1}", "1")
            deadline = time.monotonic() + 60
            while self.quorum.waiting() < want and time.monotonic() < deadline:
                time.sleep(0.01)
        waiting = float(self.quorum.waiting()) if self.gen.rank == 0 else 0.0
        buf = torch.cat([km.local_grad(self.model, step, self.wid),
                         torch.tensor([waiting], dtype=torch.float64)])
        event, mode = self.victim_of(step)
        if mode is not None:
            self.die(event, mode, buf)
        try:
            dist.all_reduce(buf)
        except RuntimeError:
            failed_at = time.time()  # wall clock: the test compares the survivors' times
            info = {"rank": self.gen.rank, "id": self.wid, "step": step}
            survivors = self.cfg.get("survivors")  # None: the quorum's settle window decides
            try:
                generation = self.quorum.reconfigure(info=info, expected=survivors)
            except QuorumError:  # noticed after the others had decided: back in as a newcomer
                generation = self.quorum.join(info={"id": self.wid})
            self.enter(generation, failed_at)
            return
        km.apply_mean(self.model, buf[:-1], self.gen.size)
        if self.cfg.get("step_sleep_s"):  # a slower step: time for the test to act mid-run
            time.sleep(self.cfg["step_sleep_s"])
        if self.gen.rank == 0:
            self.store.set(f"sched/{step}", json.dumps(self.ids()))
            self.store.set("progress", str(step))
        self.step = step + 1
        if buf[-1].item() > 0:  # rank 0 saw replacements waiting: admit them now
            info = {"rank": self.gen.rank, "id": self.wid}
            self.enter(self.quorum.reconfigure(info=info, expected=self.gen.size))

    def run(self, newcomer):
        if newcomer:
            self.enter(self.quorum.join(info={"id": self.wid}))
        else:
            info = {"rank": self.wid, "id": self.wid}
            self.enter(self.quorum.reconfigure(info=info, expected=self.cfg["initial"]))
        while self.step < self.cfg["steps"]:
            self.train_step()
        dist.barrier()  # everyone is done before anyone leaves (a leaver looks like a failure)
        result = {"id": self.wid, "params": km.flat_params(self.model).tolist(),
                  "samples": self.samples,
                  "rank": self.gen.rank, "size": self.gen.size}
        with open(os.path.join(self.cfg["out"], f"{self.wid}.json"), "w") as f:
            json.dump(result, f)
        dist.destroy_process_group()


def main(wid, cfg, newcomer):
    import torch_smddp  # noqa: F401  (registers smddp in this process)

    Worker(wid, cfg).run(newcomer)
