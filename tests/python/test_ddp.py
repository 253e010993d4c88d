# SPDX-License-Identifier: Apache-2.0
"""DDP over smddp trains exactly like DDP over gloo (20 steps, world 2 and 4): plain, no_sync,
join() with uneven inputs, find_unused_parameters, static_graph, gradient_as_bucket_view,
buffer broadcast, fp16/bf16 compression hooks, and on torch 2.x torch.compile(DDP(model)))."""
import pytest

import harness
import workers_ddp


@pytest.mark.parametrize("world", [2, 4])
def test_ddp_matches_gloo(world):
    harness.run(workers_ddp.suite, world, init="tcp", timeout=240)
