# SPDX-License-Identifier: Apache-2.0
"""Tensor parallelism on a 2-D DeviceMesh, distributed checkpoints resharded from 4 ranks to 2,
and torch.compile'd functional collectives, over smddp (workers_parallel.py). torch 2.x only."""
import pytest
import torch

import harness
import workers_parallel

pytestmark = pytest.mark.skipif(torch.__version__ < "2", reason="needs torch 2.x")


def test_tensor_parallel_matches_the_single_process_model():
    harness.run(workers_parallel.tensor_parallel, 4, init="tcp", timeout=180)


def test_checkpoint_saved_by_4_ranks_loads_on_2(tmp_path):
    path = str(tmp_path / "ckpt")
    harness.run(workers_parallel.checkpoint_save, 4, init="file", timeout=180, args=(path,))
    harness.run(workers_parallel.checkpoint_load, 2, init="file", timeout=180, args=(path,))


@pytest.mark.parametrize("world", [2, 3])
def test_compiled_functional_collectives(world):
    harness.run(workers_parallel.compiled_collectives, world, init="file", timeout=240)
