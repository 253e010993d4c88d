# SPDX-License-Identifier: Apache-2.0
"""examples/train_moe.py (expert parallelism over all_to_all_single with split sizes) under
torchrun: on one host with 3 ranks (6 experts), and on 2 namespace hosts x 2 ranks
(tests/netns/hosts.sh) with the hierarchical all_to_all(v) across hosts (SMDDP_ALGO=all_to_all:hier).
Each run trains 30 steps over smddp, then the same model over gloo in the same job; the loss must
fall and every parameter equal gloo's within fp32 rounding (1e-5 of its scale)."""
import os
import re
import subprocess
import sys

import pytest

import netns_hosts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(REPO, "examples", "train_moe.py")


def check(out):
    m = re.search(r"smddp: loss ([0-9.]+) -> ([0-9.]+) over 30 steps", out)
    assert m, out[-4000:]
    assert float(m.group(2)) < 0.5 * float(m.group(1)), m.group(0)
    d = re.search(r"smddp vs gloo: largest parameter difference ([0-9.e+-]+)", out)
    assert d and float(d.group(1)) <= 1e-5, out[-4000:]
    return float(d.group(1))


def test_moe_example_on_one_host():
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=3",
           EXAMPLE, "--compare", "gloo"]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    check(out)


@pytest.mark.skipif(netns_hosts.skip_reason() is not None, reason=str(netns_hosts.skip_reason()))
def test_moe_example_across_namespace_hosts():
    env = dict(os.environ, SMDDP_ALGO="all_to_all:hier")
    runs = netns_hosts.torchrun_on_hosts(f"moe{os.getpid() % 10000}",
                                         [EXAMPLE, "--compare", "gloo"], 29540, env=env, cwd=REPO)
    for code, out in runs:
        assert code == 0, out[-4000:]
    outs = [out for _, out in runs]
    check(outs[0])
