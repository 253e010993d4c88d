# SPDX-License-Identifier: Apache-2.0
"""FSDP2 (fully_shard) over smddp trains like FSDP2 over gloo and like the unsharded model: a
small transformer, 10 steps, fp32 and bf16 mixed precision, worlds 2 and 4, and HSDP on a 2 x 2
mesh (workers_fsdp.py). torch 2.x only."""
import pytest
import torch

import harness
import workers_fsdp

pytestmark = pytest.mark.skipif(torch.__version__ < "2", reason="FSDP2 needs torch 2.x")


@pytest.mark.parametrize("world", [2, 4])
def test_fsdp2_matches_gloo_and_the_unsharded_model(world):
    harness.run(workers_fsdp.suite, world, init="tcp", timeout=240)
