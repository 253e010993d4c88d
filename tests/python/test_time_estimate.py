# SPDX-License-Identifier: Apache-2.0
"""torch's _time_estimator on smddp (workers_estimate.py): worlds 1-5, the parameter file, a bad
file. How close the estimates come to measured times is bench/compare's and bench/testbed's
(docs/MODEL.md), not a timed test's."""
import json
import os

import pytest
import torch

import harness
import workers_estimate

# alone: every rank measures this machine's copy and reduction rates at its first estimate, and
# the suite checks that the ranks' estimates agree, which tests running beside it would upset.
pytestmark = [
    pytest.mark.skipif(not hasattr(torch.distributed, "_time_estimator"),
                       reason="this torch has no collective time estimator (torch >= 2.15)"),
    pytest.mark.alone,
]


@pytest.mark.parametrize("world", [1, 2, 3, 4, 5])
def test_estimates_cost_without_running(world):
    harness.run(workers_estimate.suite, world, init="tcp", timeout=120)


def test_the_parameter_file_applies(tmp_path, monkeypatch):
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"call_alpha": 1e-3, "calibrated_on": {"note": "test"}}))
    monkeypatch.setenv("SMDDP_COST_MODEL", str(params))
    harness.run(workers_estimate.with_file, 2, init="tcp", timeout=120)


def test_a_bad_parameter_file_is_named(tmp_path, monkeypatch):
    params = tmp_path / "bad.json"
    params.write_text(json.dumps({"net_alpah": 1e-5}))
    monkeypatch.setenv("SMDDP_COST_MODEL", str(params))
    harness.run(workers_estimate.bad_file, 2, init="tcp", timeout=120, args=(str(params),))
