# SPDX-License-Identifier: Apache-2.0
"""Smoke test of examples/train_ddp.py under torchrun (2 ranks, a few steps): it finishes, prints
one line per epoch on rank 0, the loss falls, and its RESULT line (bench/busy_ddp reads it) holds
the timed epochs' figures."""
import json
import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_train_ddp_under_torchrun():
    cmd = [
        sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
        "--redirects", "1", "--tee", "1",  # torch 1.13 + Python 3.11: 0 and 3 crash torchrun
        os.path.join(REPO, "examples", "train_ddp.py"),
        "--epochs", "3", "--steps", "6", "--batch", "16",
    ]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=240)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    losses = [float(m) for m in re.findall(r"epoch \d+/3 loss ([0-9.]+) samples/s", out)]
    assert len(losses) == 3, out[-4000:]
    assert losses[-1] < losses[0], f"loss did not fall: {losses}"
    results = re.findall(r"RESULT (\{.*\})", out)
    assert len(results) == 1, out[-4000:]
    result = json.loads(results[0])
    assert result["backend"] == "smddp" and result["world"] == 2 and result["steps"] == 12
    assert result["samples_per_s"] > 0 and result["step_ms"] > 0 and result["cpu_s_mean"] > 0
