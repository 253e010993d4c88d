# SPDX-License-Identifier: Apache-2.0
"""SageMaker-style jobs on network-namespace "hosts" (tests/netns/hosts.sh: algo-1, algo-2,
algo-3 at 192.0.2.101-103), each started by `python -m torch_smddp.launch` on every host from a
SageMaker resource config written for that host, nothing else:

- the SMDDP v1 script (examples/smddp/train_v1.py, unchanged SMDDP API) on 2 hosts x 2
  processes, config from resourceconfig.json, and the SMDDP v2 script (train_v2.py) on 3 CPU
  hosts x 1 process, config from SM_RESOURCE_CONFIG/SM_HOSTS/SM_CURRENT_HOST: each saved model
  equals the same model trained in this process on the global batches;
- a heterogeneous job: instance group "data" (2 CPU hosts, 1 process each) prepares batches and
  sends them to group "train" (1 "GPU" host, SM_NUM_GPUS=2, CPU tensors here), which trains with
  DDP over its own group: the model is bit-identical to the trainers trained alone
  (plain torchrun, the trainers preparing their batches themselves).

Invariant: bounded (every launcher has a deadline, past which its process group is killed and
the test fails with the output) and clean (namespaces deleted in a finally).
"""
import hashlib
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

import netns_hosts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOSTS_SH = netns_hosts.HOSTS_SH
LETTERS = "abcd"


pytestmark = pytest.mark.skipif(netns_hosts.skip_reason() is not None,
                                reason=str(netns_hosts.skip_reason()))


def resource_config(hosts, current, groups=None):
    """SageMaker's resourceconfig.json for `current`; groups: {name: (instance type, hosts)}."""
    groups = groups or {"homogeneousCluster": ("ml.c5.xlarge", hosts)}
    group = next(g for g, (_, members) in groups.items() if current in members)
    return {"current_host": current, "current_instance_type": groups[group][0],
            "current_group_name": group, "hosts": hosts,
            "instance_groups": [{"instance_group_name": g, "instance_type": t, "hosts": m}
                                for g, (t, m) in groups.items()],
            "network_interface_name": "eth0"}


def run_job(tmp_path, n_hosts, script, script_args, per_host, timeout=150):
    """Starts the launcher on every host; per_host(i, host) -> (env additions, extra launcher
    args). Returns {host: (returncode, output)}."""
    tag = f"sm{os.getpid() % 100000}"
    hosts = [f"algo-{i + 1}" for i in range(n_hosts)]
    procs = {}
    try:
        subprocess.run([HOSTS_SH, "up", tag, str(n_hosts)], check=True, timeout=30,
                       capture_output=True)
        for i, host in enumerate(hosts):
            env_add, launcher_args = per_host(i, host)
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("SM_", "SMDDP_FABRIC", "MASTER_", "RANK", "WORLD_"))}
            env.update(env_add, PYTHONUNBUFFERED="1", SM_MODEL_DIR=str(tmp_path / "model"))
            cmd = [HOSTS_SH, "exec", tag, LETTERS[i], sys.executable, "-m", "torch_smddp.launch"]
            log = open(tmp_path / f"{host}.log", "w+")
            procs[host] = (subprocess.Popen(cmd + launcher_args + [script] + script_args,
                                            cwd=REPO, env=env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True), log)
        deadline = time.monotonic() + timeout
        results = {}
        for host, (proc, log) in procs.items():
            try:
                proc.wait(timeout=max(1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            log.seek(0)
            results[host] = (proc.returncode, log.read())
        late = [h for h, (rc, _) in results.items() if rc is None]
        assert not late, f"no exit within {timeout} s on {late}:\n" + "\n".join(
            f"--- {h}:\n{out[-3000:]}" for h, (_, out) in results.items())
        return results
    finally:
        for proc, log in procs.values():
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            log.close()
        subprocess.run([HOSTS_SH, "down", tag], timeout=60, capture_output=True)


def assert_all_ok(results):
    for host, (rc, out) in results.items():
        assert rc == 0, f"{host} exited {rc}:\n{out[-5000:]}"


def load_example(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(REPO, "examples", "smddp",
                                                                     f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def global_batches(n, batch, epoch_seed):
    """DistributedSampler's order: every rank's k-th batch together is perm[k*B:(k+1)*B]."""
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(epoch_seed))
    return [perm[k:k + batch] for k in range(0, n, batch)]


def assert_same_model(saved_path, reference):
    saved = torch.load(saved_path)
    assert saved.keys() == reference.keys()
    for key in saved:
        assert torch.allclose(saved[key], reference[key], rtol=1e-4, atol=1e-5), (
            key, (saved[key] - reference[key]).abs().max())


def test_smddp_v1_script_on_two_hosts(tmp_path):
    hosts = ["algo-1", "algo-2"]

    def per_host(i, host):
        path = tmp_path / f"rc-{host}.json"
        path.write_text(json.dumps(resource_config(hosts, host)))
        return {"SM_NUM_GPUS": "2"}, ["--resource-config", str(path)]

    results = run_job(tmp_path, 2, "examples/smddp/train_v1.py", ["--epochs", "2"], per_host)
    assert_all_ok(results)
    for i, host in enumerate(hosts):
        assert f"host {host} = node {i} of 2 (group homogeneousCluster, 2 process(es))" in \
            results[host][1]
    assert "(world 4, local size 2)" in results["algo-1"][1], results["algo-1"][1][-3000:]

    v1 = load_example("train_v1")
    args = v1.parse_args(["--epochs", "2"])
    data = v1.synthetic_mnist(args.samples, args.seed)
    torch.manual_seed(args.seed)
    model = v1.Net()
    opt = torch.optim.Adadelta(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=args.gamma)
    for _ in range(args.epochs):  # the script never calls set_epoch: one order for all epochs
        for idx in global_batches(args.samples, args.batch_size // 4 * 4, 0):
            opt.zero_grad()
            x, y = data[idx]
            torch.nn.functional.nll_loss(model(x), y).backward()
            opt.step()
        sched.step()
    assert_same_model(tmp_path / "model" / "model.pt", model.state_dict())


def test_smddp_v2_script_on_three_hosts(tmp_path):
    hosts = ["algo-1", "algo-2", "algo-3"]

    def per_host(i, host):
        return {"SM_RESOURCE_CONFIG": json.dumps(resource_config(hosts, host)),
                "SM_HOSTS": json.dumps(hosts), "SM_CURRENT_HOST": host, "SM_NUM_GPUS": "0"}, []

    results = run_job(tmp_path, 3, "examples/smddp/train_v2.py", ["--epochs", "3"], per_host)
    assert_all_ok(results)
    assert "(world 3)" in results["algo-1"][1]

    v2 = load_example("train_v2")
    data = v2.make_dataset(480, 3)
    torch.manual_seed(3)
    model = v2.make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for epoch in range(3):
        for idx in global_batches(480, 48, epoch):
            opt.zero_grad()
            x, y = data[idx]
            torch.nn.functional.mse_loss(model(x), y).backward()
            opt.step()
    assert_same_model(tmp_path / "model" / "model.pt", model.state_dict())


SHA = re.compile(r"trained model sha256 ([0-9a-f]{64}) \(trainers (\d+), data ranks (\d+)\)")


def test_heterogeneous_cpu_data_hosts_feed_gpu_trainers(tmp_path):
    hosts = ["algo-1", "algo-2", "algo-3"]
    groups = {"data": ("ml.c5.xlarge", hosts[:2]), "train": ("ml.p4d.24xlarge", hosts[2:])}

    def per_host(i, host):
        path = tmp_path / f"rc-{host}.json"
        path.write_text(json.dumps(resource_config(hosts, host, groups)))
        return {"SM_NUM_GPUS": "2" if host == "algo-3" else "0"}, ["--resource-config",
                                                                   str(path)]

    args = ["--data-group", "data", "--train-group", "train", "--steps", "12"]
    results = run_job(tmp_path, 3, "examples/heterogeneous.py", args, per_host)
    assert_all_ok(results)
    assert "(group data, 1 process(es))" in results["algo-1"][1]
    assert "(group train, 2 process(es))" in results["algo-3"][1]
    for host in hosts[:2]:
        assert re.search(r"data rank \d \(data\) sent 12 steps to trainers \[\d\]",
                         results[host][1]), results[host][1][-3000:]
    hetero = SHA.findall(results["algo-3"][1])
    assert [(t, d) for _, t, d in hetero] == [("2", "2")], results["algo-3"][1][-3000:]

    alone = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
         "examples/heterogeneous.py"] + args, cwd=REPO, capture_output=True, text=True,
        timeout=120, env=dict(os.environ, SM_MODEL_DIR=str(tmp_path / "alone")))
    assert alone.returncode == 0, alone.stdout[-3000:] + alone.stderr[-3000:]
    reference = SHA.findall(alone.stdout + alone.stderr)
    assert [(t, d) for _, t, d in reference] == [("2", "0")]
    assert hetero[0][0] == reference[0][0]
    # and the saved state really is a trained model, not the initial one
    saved = torch.load(tmp_path / "model" / "model.pt")
    assert hashlib.sha256(b"".join(t.numpy().tobytes() for t in saved.values())).hexdigest() \
        == hetero[0][0]
