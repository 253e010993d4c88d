# SPDX-License-Identifier: Apache-2.0
"""torch_smddp.sagemaker / torch_smddp.launch without a cluster: how SageMaker's resource
config and SM_* variables become a plan (node rank, master, role, processes per host) and a
torchrun command, and that every malformed or inconsistent config is refused with a message
naming the source and the field — by the launcher too, with exit status 2 before anything
starts; the job secret reaches the workers and is never printed.

Invariant: no process is started except `python -m torch_smddp.launch` itself (refusals and
--dry-run), each with a timeout.
"""
import json
import os
import subprocess
import sys

import pytest

from torch_smddp import launch
from torch_smddp.sagemaker import ClusterConfigError, read_cluster

HETERO = {
    "current_host": "algo-3", "current_group_name": "train",
    "current_instance_type": "ml.p4d.24xlarge", "hosts": ["algo-1", "algo-2", "algo-3"],
    "instance_groups": [
        {"instance_group_name": "data", "instance_type": "ml.c5.xlarge",
         "hosts": ["algo-1", "algo-2"]},
        {"instance_group_name": "train", "instance_type": "ml.p4d.24xlarge",
         "hosts": ["algo-3"]}],
    "network_interface_name": "eth0"}


def write(tmp_path, rc):
    path = tmp_path / "resourceconfig.json"
    path.write_text(rc if isinstance(rc, str) else json.dumps(rc))
    return str(path)


def test_homogeneous_from_the_environment_alone(tmp_path):
    env = {"SM_HOSTS": '["algo-1","algo-2"]', "SM_CURRENT_HOST": "algo-2", "SM_NUM_GPUS": "8"}
    plan = read_cluster(env, str(tmp_path / "absent.json"))
    assert (plan.node_rank, plan.master_addr, plan.nproc_per_node) == (1, "algo-1", 8)
    assert plan.group == "homogeneousCluster" and not plan.heterogeneous
    assert plan.sources == ["SM_HOSTS"]


def test_cpu_instances_run_one_process_unless_told(tmp_path):
    rc = {"current_host": "algo-1", "hosts": ["algo-1"]}
    assert read_cluster({}, write(tmp_path, rc)).nproc_per_node == 1
    assert read_cluster({"SM_NUM_GPUS": "0"}, write(tmp_path, rc), 3).nproc_per_node == 3


def test_resource_config_from_the_variable_when_there_is_no_file(tmp_path):
    env = {"SM_RESOURCE_CONFIG": json.dumps(HETERO), "SM_NUM_GPUS": "4"}
    plan = read_cluster(env, str(tmp_path / "absent.json"))
    assert (plan.node_rank, plan.group, plan.nproc_per_node) == (2, "train", 4)
    assert plan.groups == {"data": ["algo-1", "algo-2"], "train": ["algo-3"]}


def test_heterogeneous_process_counts_per_group(tmp_path):
    rc = dict(HETERO, current_host="algo-2", current_group_name="data")
    plan = read_cluster({"SM_NUM_GPUS": "0"}, write(tmp_path, rc), {"data": 2, "train": 8})
    assert (plan.node_rank, plan.group, plan.nproc_per_node) == (1, "data", 2)
    assert plan.heterogeneous and plan.network_interface == "eth0"


BAD = [
    ("{not json", "not valid JSON"),
    ({"hosts": ["algo-1"]}, "missing 'current_host'"),
    ({"current_host": "algo-1"}, "missing 'hosts'"),
    ({"current_host": "algo-9", "hosts": ["algo-1", "algo-2"]}, "current_host 'algo-9' is not one"),
    ({"current_host": "algo-1", "hosts": ["algo-1", "algo-1"]}, "listed twice: algo-1"),
    ({"current_host": "algo-1", "hosts": []}, "non-empty list of host names"),
    (dict(HETERO, current_group_name="gpu"), "current_group_name 'gpu' is not one"),
    (dict(HETERO, current_group_name="data"), "current_host 'algo-3' is not in its instance group"),
    (dict(HETERO, instance_groups=HETERO["instance_groups"][:1]), "algo-3 in no instance group"),
    (dict(HETERO, instance_groups=[{"instance_group_name": "data", "hosts": ["algo-1", "algo-9"]}]),
     "host 'algo-9' of instance group 'data' is not in hosts"),
    (dict(HETERO, instance_groups=HETERO["instance_groups"] + [
        {"instance_group_name": "more", "hosts": ["algo-3"]}]),
     "host 'algo-3' is in instance groups 'train' and 'more'"),
    (dict(HETERO, instance_groups=[{"hosts": ["algo-1"]}]), "instance_groups[0] has no"),
    # found by the fuzz tier (tests/fuzz/sagemaker_fuzz.py): each escaped as another exception
    ('["current_host", "hosts"]', "expected a JSON object, got list"),
    ("7", "expected a JSON object, got int"),
    ("null", "expected a JSON object, got NoneType"),
    ('{"hosts": ' + "[" * 5000 + "]" * 5000 + "}", "not valid JSON (maximum recursion depth"),
    ('{"current_host": "algo-1", "hosts": ["algo-1"], "x": ' + "9" * 5000 + "}",
     "not valid JSON (Exceeds the limit"),
    (dict(HETERO, current_group_name=float("inf")), "current_group_name must be a string"),
    (dict(HETERO, current_group_name=["train"]), "current_group_name must be a string"),
    (dict(HETERO, network_interface_name=7), "network_interface_name must be a string, got 7"),
]


@pytest.mark.parametrize("rc,message", BAD, ids=[m for _, m in BAD])
def test_malformed_or_inconsistent_config_is_refused(tmp_path, rc, message):
    path = write(tmp_path, rc)
    with pytest.raises(ClusterConfigError) as e:
        read_cluster({}, path)
    assert message in str(e.value)
    assert path in str(e.value)  # names the file


@pytest.mark.parametrize("env,message", [
    ({"SM_HOSTS": '["algo-1","algo-3","algo-2"]'}, "SM_HOSTS ['algo-1', 'algo-3', 'algo-2'] "
                                                   "disagrees"),
    ({"SM_CURRENT_HOST": "algo-1"}, "SM_CURRENT_HOST 'algo-1' disagrees"),
    ({"SM_NUM_GPUS": "eight"}, "SM_NUM_GPUS='eight': expected an integer"),
    ({"SM_HOSTS": "algo-1"}, "SM_HOSTS: not valid JSON"),
])
def test_environment_must_agree_with_the_file(tmp_path, env, message):
    with pytest.raises(ClusterConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        read_cluster(env, write(tmp_path, HETERO))


def test_a_file_or_variable_that_is_not_json_text_is_refused(tmp_path):
    path = tmp_path / "resourceconfig.json"
    path.write_bytes(b'{"current_host": "algo-\xff", "hosts": ["algo-1"]}')
    with pytest.raises(ClusterConfigError, match="resourceconfig.json: cannot be read as UTF-8"):
        read_cluster({}, str(path))
    absent = str(tmp_path / "absent.json")
    with pytest.raises(ClusterConfigError, match="SM_RESOURCE_CONFIG: expected a JSON object"):
        read_cluster({"SM_RESOURCE_CONFIG": '"algo-1"'}, absent)
    with pytest.raises(ClusterConfigError, match="SM_HOSTS: not valid JSON"):
        read_cluster({"SM_HOSTS": "[" * 100000, "SM_CURRENT_HOST": "algo-1"}, absent)


def test_no_description_at_all(tmp_path):
    with pytest.raises(ClusterConfigError, match="no SageMaker cluster description"):
        read_cluster({"SM_CURRENT_HOST": "algo-1"}, str(tmp_path / "absent.json"))


def test_process_counts_for_an_unknown_group(tmp_path):
    with pytest.raises(ClusterConfigError, match=r"unknown instance group\(s\) \['gpu'\]"):
        read_cluster({}, write(tmp_path, HETERO), {"gpu": 8})


def test_torchrun_command(tmp_path):
    plan = read_cluster({"SM_NUM_GPUS": "2"}, write(tmp_path, HETERO))
    args = launch.parse_args(["--max-restarts", "1", "train.py", "--epochs", "3"])
    cmd = launch.torchrun_command(plan, args, 29555, python="py", torch_major=2)
    assert cmd == ["py", "-m", "torch.distributed.run", "--nnodes=3", "--node_rank=2",
                   "--nproc_per_node=2", "--master_addr=algo-1", "--master_port=29555",
                   "--role=train", "--max_restarts=1", "train.py", "--epochs", "3"]
    assert launch.torchrun_command(plan, args, 1, torch_major=1)[-5:-3] == ["--tee", "1"]
    env = launch.worker_env(plan, {"SMDDP_FABRIC_ADDR": "192.0.2.9"})
    assert env["SMDDP_FABRIC_ADDR"] == "192.0.2.9" and env["SM_CURRENT_INSTANCE_GROUP"] == "train"



def test_launcher_refuses_before_starting_anything(tmp_path):
    path = write(tmp_path, dict(HETERO, current_host="algo-7"))
    r = subprocess.run([sys.executable, "-m", "torch_smddp.launch", "--resource-config", path,
                        "train.py"], capture_output=True, text=True, timeout=60,
                       env={k: v for k, v in os.environ.items() if not k.startswith("SM_")})
    assert r.returncode == 2, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("torch_smddp.launch: " + path)
    assert "current_host 'algo-7'" in r.stderr and "torch.distributed.run" not in r.stdout


def test_launcher_dry_run_prints_the_torchrun_command(tmp_path):
    path = write(tmp_path, dict(HETERO, current_host="algo-2", current_group_name="data"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("SM_")}
    r = subprocess.run([sys.executable, "-m", "torch_smddp.launch", "--resource-config", path,
                        "--nproc-per-node", "data=3,train=8", "--dry-run", "t.py", "--x"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[1:] == ["-m", "torch.distributed.run", "--nnodes=3", "--node_rank=1",
                                    "--nproc_per_node=3", "--master_addr=algo-1",
                                    "--master_port=29500", "--role=data", "--max_restarts=0",
                                    "t.py", "--x"]
    assert "host algo-2 = node 1 of 3 (group data, 3 process(es))" in r.stderr


SECRET = "s3cr3t-value-that-must-never-be-printed"


def test_job_secret_passes_through_and_is_never_printed(tmp_path):
    plan = read_cluster({"SM_NUM_GPUS": "2"}, write(tmp_path, HETERO))
    given = {"SMDDP_JOB_SECRET": SECRET, "SMDDP_JOB_SECRET_FILE": "/run/secrets/smddp"}
    env = launch.worker_env(plan, given)
    assert {k: env[k] for k in given} == given
    assert launch.with_job_secret(plan, given, new=True) is given  # a given secret is kept
    assert launch.describe_job_secret(env) == "job secret SMDDP_JOB_SECRET=***"
    assert launch.describe_job_secret({"SMDDP_JOB_SECRET_FILE": "/f"}).endswith("_FILE=/f")
    path = write(tmp_path, dict(HETERO, current_host="algo-2", current_group_name="data"))
    r = subprocess.run([sys.executable, "-m", "torch_smddp.launch", "--resource-config", path,
                        "--dry-run", "t.py"], capture_output=True, text=True, timeout=60,
                       env=dict({k: v for k, v in os.environ.items() if not k.startswith("SM_")},
                                SMDDP_JOB_SECRET=SECRET))
    assert r.returncode == 0, r.stderr
    assert SECRET not in r.stdout + r.stderr and "job secret SMDDP_JOB_SECRET=***" in r.stderr


def test_new_job_secret_only_for_one_host(tmp_path):
    one = read_cluster({}, write(tmp_path, {"current_host": "algo-1", "hosts": ["algo-1"]}))
    assert launch.with_job_secret(one, {}, new=False) == {}
    made = [launch.with_job_secret(one, {"PATH": "/bin"}, new=True) for _ in range(2)]
    assert all(m["PATH"] == "/bin" and len(m["SMDDP_JOB_SECRET"]) == 64 for m in made)
    assert made[0]["SMDDP_JOB_SECRET"] != made[1]["SMDDP_JOB_SECRET"]
    assert launch.describe_job_secret(made[0], generated=True).endswith("=*** (new)")
    # Several hosts: each launcher would invent its own, and the ranks could not meet.
    path = write(tmp_path, dict(HETERO, current_host="algo-2", current_group_name="data"))
    r = subprocess.run([sys.executable, "-m", "torch_smddp.launch", "--resource-config", path,
                        "--new-job-secret", "--dry-run", "t.py"], capture_output=True, text=True,
                       timeout=60,
                       env={k: v for k, v in os.environ.items()
                            if not k.startswith(("SM_", "SMDDP_JOB_SECRET"))})
    assert r.returncode == 2 and "torch.distributed.run" not in r.stdout, r.stderr
    assert "--new-job-secret: the 3 hosts of this job must share one secret" in r.stderr
