# SPDX-License-Identifier: Apache-2.0
"""The torch 2.x Backend API through torch.distributed (workers_torch2.py): split_group and
new_group, object collectives, coalescing (fast-path all_reduce / all_gather_into_tensor and ops
issued between start and end), functional collectives, set_timeout, collective timing,
block_current_stream, destroy + init again, and init_process_group(backend="smddp") without
`import torch_smddp` (the torch.distributed.backends entry point, torch >= 2.14).
"""
import subprocess
import sys

import pytest
import torch

import harness
import workers_torch2

needs_2x = pytest.mark.skipif(torch.__version__ < "2.11", reason="torch 2.x Backend API")


@needs_2x
@pytest.mark.parametrize("world", [2, 4])
def test_capabilities_split_and_objects(world):
    harness.run(workers_torch2.capabilities, world, init="file", timeout=120)


@needs_2x
@pytest.mark.parametrize("world", [1, 3])
def test_coalescing(world):
    harness.run(workers_torch2.coalescing, world, init="tcp", timeout=120)


@needs_2x
def test_timeout_and_timing():
    harness.run(workers_torch2.timeout_and_timing, 3, init="file", timeout=120)


@needs_2x
def test_destroy_then_init_again():
    harness.run(workers_torch2.reinit, 2, init="file", timeout=120)


@pytest.mark.skipif(torch.__version__ < "2.14", reason="entry points need torch >= 2.14")
def test_backend_found_without_import(tmp_path):
    code = f"""
import sys, torch, torch.distributed as dist
assert "torch_smddp" not in sys.modules
dist.init_process_group("smddp", init_method="file://{tmp_path}/store", rank=0, world_size=1)
t = torch.ones(3); dist.all_reduce(t)
assert "torch_smddp" in sys.modules and dist.get_backend() == "smddp"
dist.destroy_process_group()
print("ok")
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.strip() == "ok", res.stdout + res.stderr[-3000:]
