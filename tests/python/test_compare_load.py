# SPDX-License-Identifier: Apache-2.0
"""The busy-machine tools: bench/compare --load N and bench/busy_ddp.

- BusyLoad (compare_lib/load.py) starts N busy processes per usable core in a group of their own,
  unbound, and leaves none behind: not after a normal exit, an exception, Ctrl-C or SIGTERM, and
  not beyond its bound when its parent is SIGKILLed;
- the CPU time per call (cpu_us) of every backend is read, kept through the medians and shown;
- a smoke run of bench/compare --quick --load 1 records the load in compare.json and summary.md,
  writes busy.png and cpu_us for every row, and leaves no busy process; bench/busy_ddp's smallest
  run reports both backends.
Invariant: every subprocess has a timeout; the tests that spin the CPUs run alone (`alone`).
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)

from compare_lib import busy_ddp, cli, common, load, report  # noqa: E402
from compare_lib.runners import perf_rows  # noqa: E402

SPIN = "while :; do :; done"


def _group(pgid):
    """Live (not zombie) processes of process group `pgid`."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(int(pid))
    return found


def _gone(pgid, within=5.0):
    deadline = time.monotonic() + within
    while _group(pgid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _group(pgid)


@pytest.mark.alone
def test_busy_processes_spin_unbound_and_go_on_exit_and_on_error():
    with load.BusyLoad(1, bound_s=30) as busy:
        pgid = busy.pgid
        assert busy.count == common.usable_cores() and busy.alive() == busy.count
        time.sleep(0.3)  # the stub has exec'd the shell
        for pid in _group(pgid):
            with open(f"/proc/{pid}/cmdline") as f:
                assert SPIN in f.read().replace("\0", " ")
            assert os.sched_getaffinity(pid) == set(common.usable_cpus())
            assert os.getpriority(os.PRIO_PROCESS, pid) == os.getpriority(os.PRIO_PROCESS, 0)
    assert _gone(pgid)
    with pytest.raises(RuntimeError):
        with load.BusyLoad(0.5, bound_s=30) as busy:
            pgid = busy.pgid
            assert _group(pgid)
            raise RuntimeError("a failed sweep")
    assert _gone(pgid)
    assert load.BusyLoad(0).start().count == 0  # no load, no process


_PARENT = """
import os, sys, time
sys.path.insert(0, {bench!r})
from compare_lib.load import BusyLoad
with BusyLoad(1, bound_s={bound}) as busy:
    print(busy.pgid, flush=True)
    time.sleep(60)
"""


@pytest.mark.alone
@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGKILL"])
def test_no_busy_process_outlives_an_interrupted_tool(how):
    """Ctrl-C and SIGTERM unwind through BusyLoad; a SIGKILLed parent's spinners die with it
    (PR_SET_PDEATHSIG)."""
    proc = subprocess.Popen([sys.executable, "-c", _PARENT.format(bench=BENCH, bound=30)],
                            stdout=subprocess.PIPE, text=True)
    try:
        pgid = int(proc.stdout.readline())
        deadline = time.monotonic() + 10
        while len(_group(pgid)) < common.usable_cores() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _group(pgid)
        proc.send_signal(getattr(signal, how))
        proc.wait(20)
        assert _gone(pgid), f"busy processes left after {how}: {_group(pgid)}"
    finally:
        proc.kill()
        proc.wait(10)


@pytest.mark.alone
def test_busy_processes_end_themselves_at_their_bound():
    busy = load.BusyLoad(0.5, bound_s=1).start()
    try:
        deadline = time.monotonic() + 10
        while busy.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert busy.alive() == 0
    finally:
        busy.stop()


def test_load_flag_and_header():
    assert cli.parse_args(["--load", "2"]).load == 2
    assert cli.parse_args([]).load == 0
    with pytest.raises(SystemExit):
        cli.parse_args(["--load", "-1"])
    assert load.count_for(2, 2) == 4 and load.count_for(0.5, 2) == 1 and load.count_for(0, 8) == 0
    assert cli.load_header(None) == ""
    meta = {"per_core": 1, "processes": 2, "cores": 2, "niceness": 0, "alive_at_end": 2}
    assert cli.load_header(meta).startswith("**busy machine: 1 busy processes per core "
                                            "(2 in all)**")
    assert "only 1 still ran" in cli.load_header(dict(meta, alive_at_end=1))


def test_cpu_us_is_read_kept_and_shown():
    doc = {"results": [{"size": 64, "in_place": {"time_us": 2.0, "cpu_us": 1.5, "wrong": 0},
                        "out_of_place": {"time_us": 3.0, "cpu_us": 2.5, "wrong": 0}}]}
    assert perf_rows(doc, [64], "in_place")[0]["cpu_us"] == 1.5
    old = {"results": [{"size": 64, "in_place": {"time_us": 2.0, "wrong": 0},
                        "out_of_place": None}]}
    assert perf_rows(old, [64], "in_place")[0]["cpu_us"] is None  # a tool without the field
    m = common.median_row([{"time_us": t, "cpu_us": c, "wrong": 0}
                           for t, c in ((1, 4.0), (2, 5.0), (3, 9.0))])
    assert m["cpu_us"] == 5.0
    assert common.median_row([{"time_us": 1, "wrong": 0}])["cpu_us"] is None
    cells = []
    for backend, cpu in (("smddp", 3.0), ("engine", None)):
        cell = cli._cell(2, "all_reduce", "float32", backend)
        cell["rounds"] = [[{"size": 64, "count": 16, "time_us": 4.0, "cpu_us": cpu, "wrong": 0}]]
        cells.append(report.finalize(cell, 10.0))
    table = report.backend_table(cells[0])
    assert "cpu" in table.splitlines()[1] and table.splitlines()[3].split()[-1] == "3.00"
    assert report.backend_table(cells[1]).splitlines()[3].split()[-1] == "n/a"
    md = report.markdown_group(cells, ["smddp", "engine"], cpu=True)
    head = md.splitlines()[2].split(" | ")
    row = md.splitlines()[4].split(" | ")
    assert row[head.index("smddp cpu us")] == "3.0" and row[head.index("engine cpu us")] == "n/a"
    assert "cpu us" not in report.markdown_group(cells, ["smddp", "engine"])


def test_busy_ddp_reads_the_result_lines():
    r = {"samples_per_s": 10.0, "step_ms": 100.0, "cpu_s_mean": 0.8, "steps": 4}
    runs = [{"backend": "smddp", "result": dict(r, samples_per_s=s)} for s in (9.0, 12.0, 10.0)]
    runs += [{"backend": "gloo", "error": "exit 1"}]
    s = busy_ddp.summarize(runs, ["smddp", "gloo"])
    assert s["smddp"]["samples_per_s"] == 10.0 and s["smddp"]["cpu_ms_per_step"] == 200.0
    assert s["gloo"] is None
    meta = {"nproc": 2, "threads": 2, "width": 8, "blocks": 2, "batch": 4, "rounds": 3,
            "load": {"per_core": 1, "processes": 2}}
    md = busy_ddp.markdown(meta, s)
    assert "busy machine: 1 busy processes per core (2 in all)" in md
    assert "| gloo | failed |" in md
    line = 'x [default0]:RESULT {"samples_per_s": 3.5}\n'
    assert json.loads(busy_ddp.RESULT.findall(line)[-1]) == {"samples_per_s": 3.5}


def test_busy_ddp_variants_run_smddp_with_their_environment():
    args = busy_ddp.parse_args(["--backends", "smddp-spin20,gloo"])
    assert args.backends == ["smddp-spin20", "gloo"]
    argv = busy_ddp.train_argv(args, "/repo", "smddp-spin20")
    assert argv[argv.index("--backend") + 1] == "smddp"
    assert busy_ddp.VARIANTS["smddp-spin20"][1] == {"SMDDP_SPIN_US": "20"}
    assert busy_ddp.VARIANTS["smddp"][1] == {}
    with pytest.raises(SystemExit):
        busy_ddp.parse_args(["--backends", "nccl"])


@pytest.mark.alone
def test_compare_quick_under_load(tmp_path):
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, os.path.join(BENCH, "compare"), "--quick", "--load", "1",
                          "--backends", "smddp,engine", "--no-limits", "--out", str(out)],
                         capture_output=True, text=True, timeout=400, cwd=REPO)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    doc = json.loads((out / "compare.json").read_text())
    meta = doc["meta"]["load"]
    assert meta["per_core"] == 1 and meta["processes"] == common.usable_cores()
    assert meta["alive_at_end"] == meta["processes"]
    assert _gone(meta["pgid"], within=1.0)
    summary = (out / "summary.md").read_text()
    assert summary.startswith(f"**busy machine: 1 busy processes per core "
                              f"({meta['processes']} in all)**")
    assert "smddp cpu us" in summary
    assert (out / "busy.png").stat().st_size > 0
    ran = [c for c in doc["cells"] if c["status"] == "ok"]
    assert {c["backend"] for c in ran} >= {"smddp"}
    for c in ran:
        assert all(r["cpu_us"] is not None and r["cpu_us"] >= 0 for r in c["rows"]), c


@pytest.mark.alone
def test_busy_ddp_smallest_run(tmp_path):
    out = tmp_path / "out"
    res = subprocess.run([sys.executable, os.path.join(BENCH, "busy_ddp"), "--rounds", "1",
                          "--load", "0.5", "--epochs", "2", "--steps", "2", "--width", "16",
                          "--blocks", "2", "--out", str(out)],
                         capture_output=True, text=True, timeout=300, cwd=REPO)
    assert res.returncode == 0, (res.stdout + res.stderr)[-4000:]
    doc = json.loads((out / "busy_ddp.json").read_text())
    assert set(doc["summary"]) == {"smddp", "gloo"}
    for s in doc["summary"].values():
        assert s["samples_per_s"] > 0 and s["cpu_ms_per_step"] > 0
    assert _gone(doc["meta"]["load"]["pgid"], within=1.0)
    assert "busy machine: 0.5 busy processes per core" in (out / "busy_ddp.md").read_text()
