# SPDX-License-Identifier: Apache-2.0
"""Smoke test of bench/testbed: 2 namespace hosts x 2 ranks with capped links, a short all_reduce
sweep (8 B - 64 KiB, a few calls) with every backend available here in one run (smddp also
through torch on tensors it allocated), and shorter ones
of broadcast, all_gather and reduce_scatter (smddp hierarchical and flat, gloo, Open MPI). Each
must exit 0 (every result checked, nothing wrong, no backend failed), write testbed.json with
rows for each backend at every size, and its summary and plot. Open MPI is asked for only when
mpirun exists.
Invariant: bounded by the subprocess timeout; the tool deletes its namespaces itself, also on
failure; nothing is left outside tmp_path.
"""
import json
import os
import shutil
import subprocess
import sys

import pytest

import netns_hosts

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "bench", "testbed")
BUILD = os.path.join(REPO, os.environ.get("BUILD_DIR", "build"))


def _skip_reason():
    if netns_hosts.skip_reason():
        return netns_hosts.skip_reason()
    if not os.path.exists(os.path.join(BUILD, "bench", "all_reduce_perf")):
        return f"perf tools not built in {BUILD}"
    return None


pytestmark = pytest.mark.skipif(_skip_reason() is not None, reason=str(_skip_reason()))


@pytest.mark.parametrize("collective", ["all_reduce", "broadcast", "all_gather",
                                        "reduce_scatter"])
def test_testbed_short_sweep(tmp_path, collective):
    # smddp-alloc: through torch on tensors from allocate_tensor (all_reduce at 64 KiB runs
    # hier_split, in place within each host)
    backends = ["smddp", "smddp-rxm", "smddp-alloc"] if collective == "all_reduce" else ["smddp"]
    backends += ["smddp-flat", "gloo"]
    backends += ["mpi"] if shutil.which("mpirun") else []
    top = "64K" if collective == "all_reduce" else "16K"
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, SCRIPT, "--collective", collective,
                          "--small-iters", "5", "--large-iters", "2",
                          "--max", top, "--backends", ",".join(backends), "--build", BUILD,
                          "--python", sys.executable, "--timeout", "90", "--out", str(out)],
                         capture_output=True, text=True, timeout=400, cwd=REPO)
    tail = (res.stdout + res.stderr)[-4000:]
    assert res.returncode == 0, tail
    doc = json.loads((out / "testbed.json").read_text())
    assert doc["failed"] == {}, doc["failed"]
    assert doc["meta"]["world"] == 4 and doc["meta"]["cap_gbps"] == 0.125
    assert doc["meta"]["collective"] == collective
    sizes = [8, 64, 512, 4096, 16384] + ([65536] if top == "64K" else [])
    if collective in ("all_gather", "reduce_scatter"):
        sizes = sizes[1:]  # 8 B is less than a float per rank
    for b in backends:
        rows = doc["results"][b]
        assert [r["size"] for r in rows] == sizes, (b, rows)
        assert all(r["wrong"] == 0 and r["time_us"] > 0 for r in rows), (b, rows)
    assert (out / "testbed.png").stat().st_size > 0
    summary = (out / "summary.md").read_text()
    assert "smddp/gloo" in summary and f"# {collective} on the testbed" in summary
