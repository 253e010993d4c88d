# SPDX-License-Identifier: Apache-2.0
"""Smoke test of bench/compare --quick (the CI run): it must finish in bounded time, exit 0 (every
result checked, nothing wrong) and write compare.json with rows for every backend available here.
MPI may be absent on a machine: then its cells must say "skipped" (and the output say why), not
vanish. Invariant: bounded by the subprocess timeout; leaves nothing outside tmp_path.
"""
import glob
import json
import os
import shutil
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "compare")


def _engine_built():
    names = ("all_reduce_perf", "broadcast_perf", "all_gather_perf", "reduce_scatter_perf",
             "alltoall_perf", "sendrecv_perf", "reduce_perf", "gather_perf", "scatter_perf",
             "barrier_perf")
    return any(all(os.access(os.path.join(d, n), os.X_OK) for n in names)
               for d in glob.glob(os.path.join(REPO, "build*", "bench")))


def test_compare_quick(tmp_path):
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, SCRIPT, "--quick", "--out", str(out)],
                         capture_output=True, text=True, timeout=240, cwd=REPO)
    tail = (res.stdout + res.stderr)[-4000:]
    assert res.returncode == 0, tail
    doc = json.loads((out / "compare.json").read_text())
    assert (out / "busbw.png").stat().st_size > 0
    cells = doc["cells"]
    by = {}
    for c in cells:
        by.setdefault(c["backend"], []).append(c)
    expect_present = {"smddp": True, "gloo": True,
                      "mpi": shutil.which("mpirun") is not None,
                      "engine": _engine_built()}
    for backend, present in expect_present.items():
        assert backend in by, f"no cells for {backend}"
        if present:
            ok = [c for c in by[backend] if c["status"] == "ok" and c["rows"]]
            assert ok, f"{backend}: no rows: {[(c['status'], c['reason']) for c in by[backend]]}"
            for c in ok:
                assert all(r["wrong"] == 0 for r in c["rows"]), c
        else:
            assert all(c["status"] == "skipped" for c in by[backend])
            assert f"SKIPPED backend {backend}" in res.stdout
    # every (collective, float32) cell of torch smddp ran; gloo bfloat16 is reported, not dropped
    colls = {c["collective"] for c in by["smddp"] if c["status"] == "ok"}
    assert colls == {"all_reduce", "broadcast", "all_gather", "reduce_scatter", "all_to_all",
                     "sendrecv", "reduce", "gather", "scatter", "barrier"}
    gloo_bf16 = [c for c in by["gloo"] if c["dtype"] == "bfloat16"]
    assert gloo_bf16 and all(c["status"] in ("ok", "n/a") for c in gloo_bf16)
    # gloo ran pinned and unpinned; its figure is the faster one, naming its configuration
    for run in ("gloo_pinned", "gloo_unpinned"):
        assert any(c["status"] == "ok" and c["rows"] for c in by[run]), run
    for c in by["gloo"]:
        assert all(r["config"] in ("pinned", "unpinned") for r in c["rows"]), c
    assert "memcpy_gbps" in doc["limits"]["memory"]
    # every round of every cell that ran is bracketed by two placement probes (a C compiler is
    # there: the limits above were built with it; line_rtt needs two usable cores, as the
    # limits' own round trip does), and the summary says where the host put us
    probed = "line_rtt_ns" in doc["limits"]["cache_line"]
    for c in cells:
        if c["status"] == "ok":
            assert len(c["placement_ns"]) == len(c["rounds"]), c
            assert all(len(p) == 2 and all((x and 10 < x < 1e6) if probed else x is None
                                           for x in p)
                       for p in c["placement_ns"]), c["placement_ns"]
            assert all("time_us_near" in r for r in c["rows"])
    assert "**Host placement**" in (out / "summary.md").read_text()
