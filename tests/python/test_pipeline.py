# SPDX-License-Identifier: Apache-2.0
"""torch.distributed.pipelining over smddp: GPipe and 1F1B schedules over 2 and 4 stages train
exactly as the unsplit model (workers_pipeline.py). torch 2.x only."""
import pytest
import torch

import harness
import workers_pipeline

pytestmark = pytest.mark.skipif(torch.__version__ < "2", reason="pipelining needs torch 2.x")


@pytest.mark.parametrize("world,schedule", [(2, "gpipe"), (4, "1f1b"), (3, "gpipe")])
def test_pipeline_matches_the_unsplit_model(world, schedule):
    harness.run(workers_pipeline.suite, world, init="file", timeout=180, args=(schedule,))
