# SPDX-License-Identifier: Apache-2.0
"""dist.shrink_group, get_error, abort hooks and completion listeners on smddp (torch >= 2.11;
hooks: torch >= 2.15):
- SHRINK_DEFAULT without a loss: the others shrink the default group (it stays the default), a
  DeviceMesh over the shrunk world carries a sharded DTensor, and they shrink a subgroup of
  theirs; every result exact;
- a rank killed (os._exit): get_error REMOTE_ERROR, the abort hook runs exactly once however many
  collectives fail, SHRINK_ABORT gives a group of the others that reduces right; and the same
  with an all_reduce still in flight on the broken group when the shrink starts (no hang);
- a collective nobody joins: TIMEOUT on its rank, SUCCESS on the other; completion listeners see
  every collective with its op, sequence, duration and outcome (the failed one too).
"""
import pytest
import torch

import harness
import workers_shrink

needs_hooks = pytest.mark.skipif(not hasattr(torch.distributed.ProcessGroup, "register_abort_hook"),
                                 reason="abort hooks need torch >= 2.15")


@pytest.mark.skipif(not hasattr(torch.distributed, "shrink_group"), reason="no shrink_group")
@pytest.mark.parametrize("world", [3, 4])
def test_shrink_without_a_loss(world):
    harness.run(workers_shrink.shrink_without_loss, world, init="tcp", timeout=120)


def _lost_rank_reported_only_by_the_victim(world, victim, pending):
    with pytest.raises(AssertionError) as failure:
        harness.run(workers_shrink.shrink_after_loss, world, init="tcp", timeout=120,
                    args=(victim, pending))
    report = str(failure.value)
    assert f"ranks [{victim}] of {world} did not finish" in report, report
    assert "failed:" not in report, report


@needs_hooks
@pytest.mark.parametrize("pending", [False, True])
def test_shrink_abort_after_a_lost_rank(pending):
    _lost_rank_reported_only_by_the_victim(4, 2, pending)


@needs_hooks
def test_timeout_error_and_completion_listeners():
    harness.run(workers_shrink.timeout_error, 2, init="tcp", timeout=120)
