# SPDX-License-Identifier: Apache-2.0
"""Fuzz target (atheris, run by scripts/fuzz.sh): torch_smddp.sagemaker.read_cluster, which reads
SageMaker's resource config file and SM_* variables on every host of a job.

The input is up to three sections split by a line "%%": the resource config file's bytes ("-"
alone: no file), NAME=VALUE lines of the environment (a name that is not one read_cluster reads
is mapped onto one by its bytes, so mutations land on real variables), and nproc_per_node as
JSON (used when it is an int or an object of ints, as the launcher passes it).

read_cluster must either return a consistent plan (its docstring's invariant, checked below) or
raise ClusterConfigError; any other exception is a bug atheris reports with the input. A hang is
bounded by libFuzzer's -timeout, memory by -rss_limit_mb.
"""
import json
import os
import sys
import tempfile

import atheris

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "torch_smddp"))
with atheris.instrument_imports(include=["sagemaker"]):
    import sagemaker  # the module alone: torch_smddp's __init__ would import torch

NAMES = ("SM_HOSTS", "SM_CURRENT_HOST", "SM_NUM_GPUS", "SM_NUM_CPUS", "SM_RESOURCE_CONFIG")
PATH = os.path.join(tempfile.mkdtemp(prefix="smddp-fuzz-"), "resourceconfig.json")


def environment(text):
    env = {}
    for line in text.split(b"\n"):
        name, eq, value = line.partition(b"=")
        if not eq:
            continue
        name = name.decode("utf-8", "surrogateescape")
        if name not in NAMES:
            name = NAMES[sum(name.encode("utf-8", "surrogateescape")) % len(NAMES)]
        env[name] = value.decode("utf-8", "surrogateescape")  # as os.environ decodes
    return env


def process_counts(text):
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, dict) and all(isinstance(v, int) and not isinstance(v, bool)
                                       for v in value.values()):
        return value
    return None


def check(plan, nproc):
    hosts = plan.hosts
    assert isinstance(hosts, list) and hosts, hosts
    assert all(isinstance(h, str) and h for h in hosts) and len(set(hosts)) == len(hosts), hosts
    assert isinstance(plan.current_host, str) and plan.current_host in hosts
    assert plan.hosts[plan.node_rank] == plan.current_host and plan.master_addr == hosts[0]
    assert isinstance(plan.groups, dict) and plan.groups
    owned = [h for members in plan.groups.values() for h in members]
    assert all(isinstance(g, str) and g for g in plan.groups), plan.groups
    assert sorted(owned) == sorted(hosts), plan.groups  # every host in exactly one group
    assert isinstance(plan.group, str) and plan.current_host in plan.groups[plan.group]
    assert type(plan.num_gpus) is int and plan.num_gpus >= 0, plan.num_gpus
    assert type(plan.nproc_per_node) is int and plan.nproc_per_node >= 1, plan.nproc_per_node
    if isinstance(nproc, int):
        assert plan.nproc_per_node == nproc
    assert isinstance(plan.network_interface, str), plan.network_interface
    assert all(isinstance(s, str) for s in plan.sources), plan.sources


def test_one_input(data):
    parts = data.split(b"\n%%\n", 2)
    content = parts[0]
    env = environment(parts[1]) if len(parts) > 1 else {}
    nproc = process_counts(parts[2]) if len(parts) > 2 else None
    if content == b"-":
        if os.path.exists(PATH):
            os.remove(PATH)
    else:
        with open(PATH, "wb") as f:
            f.write(content)
    try:
        plan = sagemaker.read_cluster(env, PATH, nproc)
    except sagemaker.ClusterConfigError:
        return
    check(plan, nproc)


if __name__ == "__main__":
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()
