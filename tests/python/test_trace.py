# SPDX-License-Identifier: Apache-2.0
"""SMDDP_TRACE through torch: 3 ranks, one of them 10 ms late at each all_reduce, write one trace
per rank that validates against the Trace Event Format's schema (trace_event_schema.json, what
Chrome and Perfetto read) and holds every collective with its size, algorithm and data path;
python -m torch_smddp.timeline names the late rank as the one the others waited for and draws
the PNG. A broken trace fails the schema (the check can fail).
Invariant: every job and subprocess is bounded.
"""
import copy
import glob
import json
import os
import subprocess
import sys

import jsonschema
import pytest

import harness
import workers_trace

HERE = os.path.dirname(os.path.abspath(__file__))
TIMELINE = os.path.join(os.path.dirname(HERE), "..", "python", "torch_smddp", "timeline.py")
with open(os.path.join(HERE, "trace_event_schema.json")) as f:
    SCHEMA = json.load(f)
CALLS = 40


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trace")
    old = os.environ.get("SMDDP_TRACE")
    os.environ["SMDDP_TRACE"] = str(folder / "job")
    try:
        harness.run(workers_trace.traced, 3, init="file", timeout=120, args=(2, CALLS))
    finally:
        if old is None:
            del os.environ["SMDDP_TRACE"]
        else:
            os.environ["SMDDP_TRACE"] = old
    files = sorted(glob.glob(str(folder / "job.*.json")))
    return folder, {json.load(open(p))["otherData"]["rank"]: json.load(open(p)) for p in files}


def test_every_rank_writes_a_valid_trace(traces):
    _, data = traces
    assert sorted(data) == [0, 1, 2]
    for rank, d in data.items():
        jsonschema.validate(d, SCHEMA)
        assert d["otherData"]["size"] == 3
        runs = [e for e in d["traceEvents"] if e.get("cat") == "run"]
        calls = [e for e in d["traceEvents"] if e.get("cat") == "call"]
        names = [e["name"] for e in runs]
        assert names.count("all_reduce") == CALLS, names
        assert names[-2:] == ["broadcast", "all_gather"], names[-4:]
        assert len(calls) == len(runs)
        for e in runs:
            a = e["args"]
            assert a["path"] in ("arena", "hierarchical", "network", "local"), a
            assert a["algorithm"] and a["failed"] is False and e["dur"] >= 0
            assert a["called_at_us"] <= e["ts"] + 1e-3
        ar = [e["args"] for e in runs if e["name"] == "all_reduce"]
        assert {(a["bytes"], a["dtype"], a["op"]) for a in ar} == {(256, "float32", "sum")}
        assert [e["args"]["root"] for e in runs if e["name"] == "broadcast"] == [1]


def test_a_broken_trace_fails_the_schema(traces):
    _, data = traces
    broken = copy.deepcopy(data[0])
    run = next(e for e in broken["traceEvents"] if e.get("ph") == "X")
    del run["dur"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)
    broken = copy.deepcopy(data[0])
    broken["traceEvents"][0]["ph"] = "Q"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, SCHEMA)


def test_the_timeline_names_whom_the_others_waited_for(traces, tmp_path):
    folder, _ = traces
    png = tmp_path / "timeline.png"
    r = subprocess.run([sys.executable, TIMELINE, str(folder), "-o", str(png), "--last", "30"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert "30 collectives of 3 ranks" in lines[0], r.stdout
    assert lines[1].startswith("rank 2 called last in "), r.stdout
    late = int(lines[1].split()[5])
    assert late >= 25, r.stdout  # 30 all_reduces minus the last two calls it was not late at
    waited = float(lines[1].split("waited ")[1].split()[0])
    assert 5 < waited < 50, r.stdout
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10000


def test_the_profiler_shows_each_collective_with_size_algorithm_and_plane():
    harness.run(workers_trace.profiled, 3, init="file", timeout=120)
