# SPDX-License-Identifier: Apache-2.0
"""bench/compare's size bands: sizes up to --small-max are timed with --small-iters calls, up to
--mid-max with --mid-iters, larger ones with --iters; only the torch backends get a time budget,
for the first two bands, and a worker turns that budget into the same call count on every rank
(the slowest rank's warm-up pace).
Invariant: pure Python, no process group (dist.all_reduce is replaced)."""
import os
import sys
import types

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))

from compare_lib import cli, torch_worker  # noqa: E402
from compare_lib.runners import TorchGroup  # noqa: E402


class Recorder:
    """A runner that records its calls; rejects the sweep from the `reject_from`-th call on."""

    def __init__(self, unsupported=None, reject_from=0):
        self.calls, self.unsupported, self.reject_from = [], unsupported, reject_from

    def run(self, coll, dtype, sizes, iters, warmup, **extra):
        self.calls.append((list(sizes), iters, extra))
        if self.unsupported and len(self.calls) > self.reject_from:
            return {"unsupported": self.unsupported}
        return {"rows": [{"size": s, "iters": iters} for s in sizes]}


class FakeTorch(Recorder, TorchGroup):
    pass


def _args(**kw):
    a = types.SimpleNamespace(small_max=64 << 10, small_iters=1000, mid_max=4 << 20,
                              mid_iters=200, iters=20, warmup=5, budget_ms=50.0)
    a.__dict__.update(kw)
    return a


def test_bands_split_at_small_and_mid_max_and_keep_order():
    r = Recorder()
    sizes = [16, 4096, 65536, 262144, 4 << 20, 16 << 20]
    res = cli._run_bands(r, "all_reduce", "float32", sizes, _args())
    assert [row["size"] for row in res["rows"]] == sizes
    assert [row["iters"] for row in res["rows"]] == [1000, 1000, 1000, 200, 200, 20]
    assert r.calls == [([16, 4096, 65536], 1000, {}), ([262144, 4 << 20], 200, {}),
                       ([16 << 20], 20, {})]


def test_only_torch_backends_get_a_budget_and_not_for_the_large_band():
    t = FakeTorch()
    cli._run_bands(t, "barrier", "float32", [0], _args())
    assert t.calls == [([0], 1000, {"budget_ms": 50.0, "min_iters": 20})]
    mixed = FakeTorch()
    cli._run_bands(mixed, "all_gather", "float32", [16, 1 << 20, 64 << 20], _args())
    assert mixed.calls == [([16], 1000, {"budget_ms": 50.0, "min_iters": 20}),
                           ([1 << 20], 200, {"budget_ms": 50.0, "min_iters": 20}),
                           ([64 << 20], 20, {})]


def test_a_mid_max_below_small_max_leaves_the_mid_band_empty():
    r = Recorder()
    cli._run_bands(r, "all_reduce", "float32", [16, 1 << 20], _args(mid_max=1024))
    assert r.calls == [([16], 1000, {}), ([1 << 20], 20, {})]


def test_never_fewer_small_or_mid_calls_than_iters():
    small = FakeTorch()
    cli._run_bands(small, "broadcast", "float32", [16, 1 << 20, 64 << 20],
                   _args(small_iters=3, mid_iters=5))
    assert small.calls == [([16], 20, {}), ([1 << 20], 20, {}), ([64 << 20], 20, {})]


def test_defaults_time_ten_thousand_small_and_two_hundred_mid_calls():
    a = cli.parse_args([])
    assert cli.bands(a) == [(64 << 10, 10000), (4 << 20, 200), (None, 20)]


def test_quick_runs_three_calls_everywhere_without_a_budget():
    a = cli.parse_args(["--quick"])
    assert (a.iters, a.small_iters, a.mid_iters, a.max) == (3, 3, 3, 64 << 10)
    t = FakeTorch()
    cli._run_bands(t, "all_reduce", "float32", [8, 64 << 10], a)
    assert t.calls == [([8, 64 << 10], 3, {})]


@pytest.mark.parametrize("reject_from, calls", [(0, 1), (1, 2), (2, 3)])
def test_unsupported_in_any_band_answers_for_the_sweep(reject_from, calls):
    r = Recorder(unsupported="no bfloat16", reject_from=reject_from)
    res = cli._run_bands(r, "all_reduce", "bfloat16", [16, 1 << 20, 64 << 20], _args())
    assert res == {"unsupported": "no bfloat16"}
    assert len(r.calls) == calls


@pytest.mark.parametrize("pace_s, want", [(1e-6, 1000), (1e-3, 50), (1.0, 20)])
def test_calls_for_fits_the_budget_at_the_slowest_pace(monkeypatch, pace_s, want):
    seen = []

    def fake_all_reduce(t, op=None):
        seen.append(op)
        t.fill_(pace_s)  # the slowest rank's pace, whatever this rank measured

    monkeypatch.setattr(torch_worker.dist, "all_reduce", fake_all_reduce)
    cmd = {"iters": 1000, "budget_ms": 50.0, "min_iters": 20}
    assert torch_worker.calls_for(cmd, 1e-9) == want
    assert seen == [torch_worker.dist.ReduceOp.MAX]


def test_calls_for_without_budget_is_iters():
    assert torch_worker.calls_for({"iters": 7}, 123.0) == 7
