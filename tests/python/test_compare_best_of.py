# SPDX-License-Identifier: Apache-2.0
"""bench/compare's gloo figures come from gloo's better configuration (compare_lib/best_of.py):
per size the faster of the pinned and the unpinned run, each row naming its configuration; a
configuration that failed does not compete; the measured cells stay as they were, renamed.

Invariant: pure (no process started): cells are built here.
"""
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

from compare_lib import best_of, report  # noqa: E402


def cell(backend, times, status="ok", coll="all_reduce"):
    rows = [{"size": 8 << k, "count": 2 << k, "time_us": t, "wrong": 0, "busbw_gbps": 1.0 / t,
             "algbw_gbps": 1.0 / t, "pct_memcpy": None} for k, t in enumerate(times)]
    return {"world": 2, "collective": coll, "dtype": "float32", "backend": backend,
            "status": status, "reason": "" if status == "ok" else "boom",
            "rounds": [rows] if status == "ok" else [], "placement_ns": [],
            "rows": rows if status == "ok" else [], "cores": 2, "oversubscribed": False}


def by_backend(cells):
    return {c["backend"]: c for c in cells}


def test_run_order_puts_the_unpinned_run_after_gloo():
    assert best_of.run_order(["smddp", "gloo", "mpi"], True) == [
        "smddp", "gloo", "gloo_unpinned", "mpi"]
    assert best_of.run_order(["smddp", "gloo", "mpi"], False) == ["smddp", "gloo", "mpi"]


def test_the_faster_configuration_per_size_is_gloos_figure():
    cells = best_of.merge([cell("smddp", [1.0, 2.0, 3.0]), cell("gloo", [10.0, 5.0, 30.0]),
                           cell("gloo_unpinned", [4.0, 6.0, 31.0])])
    by = by_backend(cells)
    assert set(by) == {"smddp", "gloo", "gloo_pinned", "gloo_unpinned"}
    assert [r["time_us"] for r in by["gloo_pinned"]["rows"]] == [10.0, 5.0, 30.0]
    assert [(r["time_us"], r["config"]) for r in by["gloo"]["rows"]] == [
        (4.0, "unpinned"), (5.0, "pinned"), (30.0, "pinned")]
    assert best_of.config_counts(by["gloo"]) == {"unpinned": 1, "pinned": 2}
    ratios = report.ratio_rows([by["smddp"], by["gloo"]])
    assert [r["time_vs_gloo"] for r in ratios] == [0.25, 0.4, 0.1]
    md = report.markdown_group([by["smddp"], by["gloo"]], ["smddp", "gloo"])
    assert "gloo config" in md.splitlines()[2] and md.splitlines()[4].endswith("| unpinned |")


def test_a_failed_configuration_does_not_compete():
    cells = best_of.merge([cell("gloo", [10.0]), cell("gloo_unpinned", [1.0], status="error")])
    gloo = by_backend(cells)["gloo"]
    assert gloo["status"] == "ok" and [r["config"] for r in gloo["rows"]] == ["pinned"]
    cells = best_of.merge([cell("gloo", [10.0], status="n/a")])
    gloo = by_backend(cells)["gloo"]
    assert gloo["status"] == "n/a" and gloo["rows"] == []


def test_groups_are_kept_apart():
    cells = best_of.merge([cell("gloo", [10.0]), cell("gloo_unpinned", [20.0]),
                           cell("gloo", [7.0], coll="broadcast"),
                           cell("gloo_unpinned", [3.0], coll="broadcast")])
    best = {c["collective"]: c["rows"][0]["time_us"] for c in cells if c["backend"] == "gloo"}
    assert best == {"all_reduce": 10.0, "broadcast": 3.0}
