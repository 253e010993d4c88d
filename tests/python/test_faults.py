# SPDX-License-Identifier: Apache-2.0
"""Faults through torch.distributed over smddp (2-3 spawned ranks, time-bounded by harness.run):

- bad input (AVG on bool, bits8, BXOR on float32, overlapping all_gather buffers, roots outside
  the group, a meta tensor) raises at once, and the group still gives right answers afterwards;
  non-contiguous tensors (transposed, strided) work in all_reduce, broadcast and all_gather;
- ranks that disagree on a collective (size, dtype, kind, root) all raise within a few PG timeouts;
- a rank SIGKILLed inside a stream of all_reduces makes the others raise within seconds (PG
  timeout 60 s) naming it, and destroy_process_group of the broken group returns promptly.
"""
import pytest

import harness
import workers_faults


@pytest.mark.parametrize("world", [2, 3])
def test_bad_input_raises_at_once_and_group_stays_usable(world):
    harness.run(workers_faults.bad_input, world, init="file", timeout=120)


# A mismatch (size, dtype, kind or root) must raise on every rank, never complete with wrong data.
@pytest.mark.parametrize("kind", ["size", "dtype", "collective", "root"])
def test_mismatched_collective_raises_on_every_rank(kind):
    harness.run(workers_faults.mismatch, 2, init="file", timeout=60, args=(kind,))


def test_sigkilled_peer_makes_the_others_raise():
    world, victim = 3, 1
    with pytest.raises(AssertionError) as failure:
        harness.run(workers_faults.killed_peer, world, init="file", timeout=90,
                    args=(victim, 50))
    report = str(failure.value)
    # the only failure harness may report is the victim itself, killed by SIGKILL (-9)
    assert f"ranks [{victim}] of {world} did not finish" in report, report
    assert f"{victim}: -9" in report, report
    assert "failed:" not in report, report
