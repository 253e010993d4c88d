# SPDX-License-Identifier: Apache-2.0
"""bench/compare's host-placement flags (compare_lib/placement.py): a round is far when one of its
probes exceeds FAR_FACTOR x the run's median probe; a row's time_us_near is the median over the
other rounds. Invariant: pure Python on made-up cells, no process started."""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

from compare_lib import placement, report  # noqa: E402


def _cell(times, probes, backend="smddp"):
    rounds = [[{"size": 1 << 20, "count": 1 << 18, "time_us": t, "wrong": 0}] for t in times]
    return {"world": 2, "collective": "broadcast", "dtype": "float32", "backend": backend,
            "status": "ok", "reason": "", "rounds": rounds, "placement_ns": probes, "rows": []}


def test_far_rounds_use_the_runs_median_probe():
    near = _cell([25.0, 30.0, 27.0], [[120.0, 118.0], [121.0, 119.0], [117.0, 122.0]], "mpi")
    mixed = _cell([24.0, 140.0, 26.0, 150.0, 28.0],
                  [[120.0, 121.0], [119.0, 290.0], [118.0, 117.0], [300.0, 280.0],
                   [None, 120.0]])
    cells = [near, mixed]
    limit = placement.threshold(cells)
    # 15 probes (None skipped): the median is 120 ns
    assert abs(limit - placement.FAR_FACTOR * 120.0) < 1e-9
    assert placement.far_rounds(near, limit) == []
    assert placement.far_rounds(mixed, limit) == [1, 3]
    assert placement.far_rounds(mixed, None) == []


def test_finalize_keeps_every_round_and_adds_the_near_median():
    mixed = _cell([24.0, 140.0, 26.0, 150.0, 28.0], [[1.0, 1.0]] * 5)
    row = report.finalize(mixed, 16.0, far=[1, 3])["rows"][0]
    assert row["time_us"] == 28.0  # median of all five rounds
    assert row["time_us_near"] == 26.0  # median of rounds 1, 3, 5
    allfar = report.finalize(_cell([140.0, 150.0], [[1.0, 1.0]] * 2), 16.0, far=[0, 1])
    assert allfar["rows"][0]["time_us_near"] is None
    plain = report.finalize(_cell([30.0, 10.0, 20.0], [[1.0, 1.0]] * 3), 16.0)
    assert plain["rows"][0]["time_us_near"] == plain["rows"][0]["time_us"] == 20.0


def test_markdown_lists_far_cells_with_their_worst_probes():
    near = _cell([25.0], [[120.0, 118.0]], "mpi")
    mixed = _cell([24.0, 140.0], [[120.0, 121.0], [119.0, 290.0]])
    text = placement.markdown([near, mixed])
    assert "| 2 | broadcast | float32 | smddp | 2 of 2 | 290 |" in text
    assert "| mpi |" not in text
    assert "No cell ran" in placement.markdown([near])
    assert "not probed" in placement.markdown([_cell([25.0], [[None, None]])])
