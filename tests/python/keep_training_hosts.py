# SPDX-License-Identifier: Apache-2.0
"""The keep-training run across namespace hosts (test_keep_training_hosts.py starts it inside
host a): serves the store there (it outlives the workers), starts 2 workers on each of hosts
a, b, c (workers_keep_training.py, through tests/netns/hosts.sh exec), and once rank 0 is at
step `--at`, SIGKILLs every process of host c (`kill`) or takes its link down (`cut`). The
workers of a and b notice, agree through the store (host c cannot reach it any more) and go on
as 4. Writes a report (JSON) for the test: errors of a's and b's workers, the schedule, the
replay's worst difference, the recovery time.

Invariant: bounded (--limit); what it started is killed by `hosts.sh down` in the test.
"""
import argparse
import json
import os
import subprocess
import sys
import time
from datetime import timedelta

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
HOSTS_SH = os.path.join(os.path.dirname(HERE), "netns", "hosts.sh")
ADDR_A = "192.0.2.101"
HOST_OF = {0: "a", 1: "a", 2: "b", 3: "b", 4: "c", 5: "c"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tag", required=True)
    ap.add_argument("--fault", choices=["kill", "cut"], required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--at", type=int, default=15)
    ap.add_argument("--limit", type=float, default=150)
    args = ap.parse_args()

    import torch.distributed as dist

    import keep_training_model as km

    store = dist.TCPStore(ADDR_A, 29533, is_master=True, wait_for_workers=False,
                          timeout=timedelta(seconds=30))
    cfg = {"backend": "smddp", "plan": [], "steps": args.steps, "initial": 6, "host": ADDR_A,
           "port": store.port, "out": args.out, "timeout_s": 20.0, "settle_s": 1.0,
           "max_workers": 1024, "survivors": 4, "step_sleep_s": 0.05}
    # A killed host's processes are named through their hosts' answer (liveness probe) with the
    # default heartbeat timeout; a cut-off host answers nothing: its heartbeat decides, 3 s here.
    env = dict(os.environ)
    if args.fault == "cut":
        env["SMDDP_HEARTBEAT_TIMEOUT_MS"] = "3000"
    code = ("import sys, json; sys.path.insert(0, sys.argv[1]); import keep_training_cluster as c;"
            " c._child(int(sys.argv[2]), json.loads(sys.argv[3]), False, float(sys.argv[4]))")
    procs = {w: subprocess.Popen([HOSTS_SH, "exec", args.tag, HOST_OF[w], sys.executable, "-c",
                                  code, HERE, str(w), json.dumps(cfg), str(args.limit)], env=env)
             for w in HOST_OF}
    deadline = time.monotonic() + args.limit
    while time.monotonic() < deadline:
        if store.check(["progress"]) and int(store.get("progress")) >= args.at:
            break
        time.sleep(0.01)
    faulted = time.time()
    if args.fault == "kill":
        subprocess.run([HOSTS_SH, "kill", args.tag, "c"], check=True, timeout=30)
    else:
        subprocess.run([HOSTS_SH, "link", args.tag, "c", "down"], check=True, timeout=30)
    for w in (0, 1, 2, 3):
        try:
            procs[w].wait(max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pass
    errors = {}
    for w in (0, 1, 2, 3):
        path = os.path.join(args.out, f"{w}.err")
        if procs[w].returncode != 0:
            errors[w] = f"exit {procs[w].returncode}: " + (open(path).read()
                                                          if os.path.exists(path) else "")
    results = {}
    for w in (0, 1, 2, 3):
        path = os.path.join(args.out, f"{w}.json")
        if os.path.exists(path):
            results[w] = json.load(open(path))
    keys = [f"sched/{s}" for s in range(args.steps)]
    schedule = ({s: json.loads(store.get(k)) for s, k in enumerate(keys)}
                if all(store.check([k]) for k in keys) else None)
    worst = None
    if schedule is not None and results:
        import torch

        reference = km.replay(schedule)
        worst = max((torch.tensor(r["params"], dtype=torch.float64) - reference).abs().max().item()
                    for r in results.values())
    pairs = [json.loads(store.get(k)) for k in (f"recovery/1/{w}" for w in range(4))
             if store.check([k])]
    report = {"errors": errors, "finished": sorted(results), "schedule": schedule, "worst": worst,
              "recovery_s": (max(r for _, r in pairs) - faulted) if pairs else None}
    with open(os.path.join(args.out, "report.json"), "w") as f:
        json.dump(report, f)


if __name__ == "__main__":
    main()
