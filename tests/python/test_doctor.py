# SPDX-License-Identifier: Apache-2.0
"""The hang doctor (python -m torch_smddp.doctor): over dump texts in the format the engine writes
(src/watch/collective_watch.cc, flight_recorder.cc, peer_progress.cc) and over real dumps of three
hangs made by the engine: a rank that skips a collective, one that calls all_gather where the others
call all_reduce, and one SIGSTOPped. Each explanation names the culprit rank and the collective, and
the doctor exits 1; nothing wrong found exits 0; unreadable input exits 2. Its export
(--torch-trace) is read by torch's own flight-recorder analyzer (torch.distributed.flight_recorder),
which must find the same culprit.
Invariant: every subprocess and every spawned job is bounded (timeout=).
"""
import logging
import os
import pickle
import subprocess
import sys

import pytest

import harness
import workers_doctor

HERE = os.path.dirname(os.path.abspath(__file__))
DOCTOR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python", "torch_smddp", "doctor.py")
sys.path.insert(0, os.path.dirname(DOCTOR))
import doctor  # noqa: E402  (the file alone: it needs neither torch nor the extension)

AR = "all_reduce(float32, 16, sum) [ring]"
AG = "all_gather(float32, 16) [ring]"


def dump(rank, world, calls, error, beacons):
    """A dump as CollectiveWatch::dumpText writes it. calls: [(call, state)], one per seq from 0;
    beacons: {peer: (heartbeat, called, completed, last call text)} or None for 'no beacon'."""
    out = (f"smddp flight recorder: rank {rank} of {world} (host{rank}, pid {100 + rank}), "
           f"2026-12-07 12:00:00\nerror: {error}\n\n-- progress beacons, read now --\n")
    for peer in range(world):
        if peer == rank:
            text = "(this rank)"
        elif beacons.get(peer) is None:
            text = "no beacon"
        else:
            hb, called, completed, last = beacons[peer]
            text = f"heartbeat {hb}, called {called}, completed {completed}"
            if called:
                text += f", last called #{called - 1} {last}"
        out += f"rank {peer} (host{peer}): {text}\n"
    out += "\n-- last 256 collectives of this rank (ms since the communicator was created) --\n"
    for seq, (call, state) in enumerate(calls):
        out += f"#{seq}  {call}  {state}  posted at {10.0 * seq:.1f} ms"
        if state in ("running", "done", "failed"):
            out += ", started after 0.1 ms"
        if state in ("done", "failed"):
            out += ", ran 4000.2 ms" if state == "failed" else ", ran 0.3 ms"
        if state == "failed":
            out += f"\n    error: {error}"
        out += "\n"
    return out


def write(tmp_path, texts, prefix="hang"):
    for rank, text in texts.items():
        (tmp_path / f"{prefix}.{rank}").write_text(text)
    return str(tmp_path)


def run_doctor(directory, *extra):
    # As a user runs it: the file alone (python -m torch_smddp.doctor is checked on real dumps).
    r = subprocess.run([sys.executable, DOCTOR, directory, *extra], capture_output=True,
                       text=True, timeout=60)
    print(r.stdout, r.stderr)
    return r


def test_skipped_collective_names_the_rank_behind(tmp_path):
    ok = [(AR, "done")] * 3
    err = ("smddp rank 0 (host0): all_reduce #3 (float32 x 16 = 64 B, sum, ring): timed out "
           "after 4000 ms; rank 1 (host1) has not entered it; last collective completed by "
           "rank 1: #2")
    texts = {r: dump(r, 3, ok + [(AR, "failed")], err.replace("rank 0 (host0)", f"rank {r}"),
                     {p: (40, 4 if p != 1 else 3, 3, AR) for p in range(3)})
             for r in (0, 2)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "rank 1 (host1) is at #2, ranks 0,2 at #3: it did not call all_reduce #3" in r.stdout
    assert "culprit: rank 1" in r.stdout
    assert len(r.stdout.splitlines()) <= 12


def test_mismatch_names_the_odd_rank(tmp_path):
    ok = [(AR, "done")] * 3
    err = ("smddp rank 0: collective mismatch at #3: rank 0 called all_reduce but rank 2 called "
           "all_gather")
    texts = {r: dump(r, 3, ok + [(AG if r == 2 else AR, "failed")], err, {}) for r in range(3)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "rank 2 (host2) called all_gather #3 where ranks 0,1 called all_reduce #3" in r.stdout
    assert "culprit: rank 2" in r.stdout


def test_mismatch_seen_only_in_a_beacon(tmp_path):
    # rank 2 wrote no dump; its peers' beacons of it say it called all_gather at #3
    ok = [(AR, "done")] * 3
    err = "smddp rank 0: all_reduce #3: timed out after 4000 ms"
    beacons = {0: (9, 4, 3, AR), 1: (9, 4, 3, AR), 2: (9, 4, 3, AG)}
    texts = {r: dump(r, 3, ok + [(AR, "failed")], err, beacons) for r in (0, 1)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "rank 2 (host2) called all_gather #3 where ranks 0,1 called all_reduce #3" in r.stdout


def test_stopped_rank_is_named_with_where_it_stopped(tmp_path):
    ok = [(AR, "done")] * 3
    err = ("smddp rank 0 (host0): all_reduce #3: rank 1 (host1) is gone: its progress beacon has "
           "not moved for 1500 ms (process died or hung, or host lost); last collective "
           "completed by rank 1 (host1): #2")
    texts = {r: dump(r, 3, ok + [(AR, "failed")], err,
                     {p: (7, 4 if p != 1 else 3, 3, AR) for p in range(3)}) for r in (0, 2)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "rank 1 (host1) stopped or died after all_reduce #2, before all_reduce #3" in r.stdout
    assert "culprit: rank 1" in r.stdout
    assert "is at #2" not in r.stdout  # said once, as the dead rank, not again as behind


def test_stopped_rank_with_a_stale_beacon(tmp_path):
    # its beacon was last published after #0: the doctor says so, and where the others wait
    ok = [(AR, "done")] * 3
    err = "smddp rank 0: all_reduce #3: rank 1 (host1) is gone: its progress beacon has not moved"
    texts = {r: dump(r, 3, ok + [(AR, "failed")], err,
                     {p: (7, 4 if p != 1 else 1, 4 if p != 1 else 1, AR) for p in range(3)})
             for r in (0, 2)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert ("rank 1 (host1) stopped or died after all_reduce #0, before all_reduce #1 (by its last "
            "beacon), while ranks 0,2 wait in all_reduce #3") in r.stdout


def test_stopped_inside_a_collective(tmp_path):
    ok = [(AR, "done")] * 3
    err = "smddp rank 0: all_reduce #3: rank 1 (host1) is gone: its process no longer exists"
    texts = {r: dump(r, 3, ok + [(AR, "failed")], err,
                     {p: (7, 4, 3, AR) for p in range(3)}) for r in (0, 2)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "rank 1 (host1) stopped or died inside all_reduce #3" in r.stdout


def test_a_large_job_stays_on_one_screen(tmp_path):
    # 64 ranks, rank 17 skipped #3: the ranks that did the same thing share a line
    ok = [(AR, "done")] * 3
    beacons = {p: (40, 4 if p != 17 else 3, 3, AR) for p in range(64)}
    texts = {r: dump(r, 64, ok + [(AR, "failed")], "smddp: timed out", beacons)
             for r in range(64) if r != 17}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 1, r
    assert "  ranks 0-16,18-63: failed in all_reduce #3 (float32, 16, sum)\n" in r.stdout
    assert "rank 17 (host17) is at #2, ranks 0-16,18-63 at #3: it did not call all_reduce #3" \
        in r.stdout
    assert len(r.stdout.splitlines()) <= 12


def test_nothing_wrong_exits_zero(tmp_path):
    ok = [(AR, "done")] * 4
    texts = {r: dump(r, 2, ok, "smddp rank 0: all_reduce #3: timed out", {0: (5, 4, 4, AR),
                                                                           1: (5, 4, 4, AR)})
             for r in range(2)}
    r = run_doctor(write(tmp_path, texts))
    assert r.returncode == 0, r
    assert "no culprit found" in r.stdout


def test_unreadable_input_exits_two(tmp_path):
    assert run_doctor(str(tmp_path / "missing")).returncode == 2
    assert run_doctor(str(tmp_path)).returncode == 2  # no dump in it
    (tmp_path / "hang.0").write_text("not a dump\n")
    r = run_doctor(str(tmp_path), "--prefix", "hang")
    assert r.returncode == 2 and "not an smddp flight-recorder dump" in r.stderr, r


def analyze(directory, caplog):
    """torch's analyzer over an exported folder, in-process: (loaded dumps by rank, database, log).
    The ranks are handed to it in rank order: it matches every rank against the first one."""
    from torch.distributed.flight_recorder.components.builder import build_db
    from torch.distributed.flight_recorder.components.config_manager import JobConfig
    from torch.distributed.flight_recorder.components.loader import read_dir

    args = JobConfig().parse_args([directory])  # the file prefix is inferred, as users run it
    details, version = read_dir(args)
    details = dict(sorted(details.items(), key=lambda kv: kv[1]["rank"]))
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="Flight Recorder"):
        db = build_db(details, args, version)
    print(caplog.text)
    return {d["rank"]: d for d in details.values()}, db, caplog.text


def test_torch_analyzer_reads_a_mismatch(tmp_path, caplog):
    ok = [(AR, "done")] * 3
    err = "smddp rank 0: collective mismatch at #3: rank 0 called all_reduce but rank 2 called " \
          "all_gather"
    texts = {r: dump(r, 3, ok + [(AG if r == 2 else AR, "failed")], err, {}) for r in range(3)}
    out = str(tmp_path / "torch")
    r = run_doctor(write(tmp_path, texts), "--torch-trace", out)
    assert r.returncode == 1 and "culprit: rank 2" in r.stdout, r  # the explanation, still
    assert sorted(os.listdir(out)) == [f"smddp_trace_rank_{i}" for i in range(3)]
    assert "fr_trace " + out + " --prefix smddp_trace_rank_\n" in r.stderr, r.stderr
    ranks, db, log = analyze(out, caplog)
    assert sorted(ranks) == [0, 1, 2] and {d["version"] for d in ranks.values()} == {"2.10"}
    last = ranks[2]["entries"][-1]
    assert (last["profiling_name"], last["collective_seq_id"], last["state"]) == (
        "nccl:all_gather", 3, "started")
    assert (last["input_sizes"], last["output_sizes"], last["input_dtypes"]) == (
        [[16]], [[48]], ["Float"])
    assert [(c.collective_seq_id, c.collective_name, c.pass_check) for c in db.collectives[:3]] \
        == [(s, "nccl:all_reduce", True) for s in range(3)]
    bad = db.collectives[3]
    assert (bad.collective_seq_id, bad.pass_check, sorted(bad.mismatch_collectives)) == (3, False,
                                                                                        [2])
    odd = bad.mismatch_collectives[2]
    assert odd.collective_name == "nccl:all_gather"
    assert odd.type_of_mismatch.state.name == "COLLECTIVE_TYPE_MISMATCH"
    assert "Collective sequence number: 3 has errors" in log
    assert "Culprit rank 2; Error type: COLLECTIVE_TYPE_MISMATCH" in log


def test_torch_analyzer_reads_a_skipped_collective(tmp_path, caplog):
    # rank 1 completed #2 and never called #3 (it dumped later, on its own timeout)
    ok = [(AR, "done")] * 3
    err = "smddp rank 0: all_reduce #3 (float32 x 16 = 64 B, sum, ring): timed out after 4000 ms"
    beacons = {p: (40, 4 if p != 1 else 3, 3, AR) for p in range(3)}
    texts = {r: dump(r, 3, ok + ([] if r == 1 else [(AR, "failed")]), err, beacons)
             for r in range(3)}
    out = str(tmp_path / "torch")
    r = run_doctor(write(tmp_path, texts), "--torch-trace", out)
    assert r.returncode == 1 and "culprit: rank 1" in r.stdout, r
    ranks, db, log = analyze(out, caplog)
    assert [len(ranks[i]["entries"]) for i in range(3)] == [4, 3, 4]
    with open(os.path.join(out, "smddp_trace_rank_0"), "rb") as f:
        status = pickle.load(f)["pg_status"]  # torch's own file has it; its loader skips it
    assert status == {"0": {"last_enqueued_collective": 3, "last_started_collective": 3,
                            "last_completed_collective": 2}}
    assert ranks[0]["entries"][3]["timeout_ms"] == 4000
    assert [c.pass_check for c in db.collectives[:3]] == [True] * 3
    skipped = db.collectives[3]
    assert (skipped.collective_seq_id, skipped.collective_state, skipped.missing_ranks) == (
        3, "started", {1})
    assert "Not all ranks joining collective, sequence number: 3" in log
    assert "missing ranks: {1}" in log

    # as the engine writes it: the rank that skipped wrote no dump; the analyzer must be told
    os.remove(tmp_path / "hang.1")
    r = run_doctor(str(tmp_path), "--prefix", "hang", "--torch-trace", str(tmp_path / "two"))
    assert sorted(os.listdir(tmp_path / "two")) == ["smddp_trace_rank_0", "smddp_trace_rank_2"]
    assert r.stderr.rstrip().endswith("--allow-incomplete-ranks"), r.stderr


def test_parser_reads_every_field(tmp_path):
    text = dump(0, 2, [(AR, "done"), (AG, "failed")], "boom", {1: (3, 2, 1, AG)})
    (tmp_path / "x.0").write_text(text)
    d = doctor.Dump(str(tmp_path / "x.0"))
    assert (d.rank, d.world, d.host, d.pid, d.error) == (0, 2, "host0", 100, "boom")
    assert [(e.seq, e.kind, e.algorithm, e.state) for e in d.entries] == [
        (0, "all_reduce", "ring", "done"), (1, "all_gather", "ring", "failed")]
    assert d.entries[1].error == "boom" and d.entries[1].ran_ms == pytest.approx(4000.2)
    assert (d.entries[1].posted_ms, d.entries[1].started_ms) == (10.0, pytest.approx(0.1))
    assert d.beacons[1] == {"heartbeat": 3, "called": 2, "completed": 1, "last_seq": 1,
                            "last_call": AG}


# Real hangs: the engine writes the dumps (4 s group timeout), the doctor reads them. A TCPStore:
# a FileStore's lock could be held by the SIGSTOPped rank's beacon thread.
@pytest.mark.parametrize("scenario,culprit,needle", [
    ("skip", 1, "it did not call all_reduce #"),
    ("mismatch", 2, "rank 2 ({host}) called all_gather #"),
    ("stop", 1, "rank 1 ({host}) stopped or died after all_reduce #"),
])
def test_real_hang_is_explained(tmp_path, monkeypatch, scenario, culprit, needle):
    prefix = str(tmp_path / "hang")
    monkeypatch.setenv("SMDDP_DUMP_ON_TIMEOUT", prefix)
    monkeypatch.setenv("SMDDP_BEACON_MS", "200")
    monkeypatch.setenv("SMDDP_HEARTBEAT_TIMEOUT_MS", "1500")
    harness.run(workers_doctor.hang, 3, init="tcp", timeout=90,
                args=(scenario, culprit, prefix))
    dumps = sorted(os.listdir(tmp_path))
    r = subprocess.run([sys.executable, "-m", "torch_smddp.doctor", str(tmp_path), "--prefix",
                        "hang"], capture_output=True, text=True, timeout=120)
    print(dumps, r.stdout, r.stderr)
    assert r.returncode == 1, (r.stdout, r.stderr)
    host = doctor.load(str(tmp_path), "hang")[0].hosts.get(culprit, "")
    assert needle.format(host=host) in r.stdout, r.stdout
    assert f"culprit: rank {culprit}\n" in r.stdout, r.stdout
    assert len(r.stdout.splitlines()) <= 12, r.stdout
    if scenario == "mismatch":
        # torch's analyzer, as a user runs it, over the export of the engine's dumps
        out = str(tmp_path / "torch")
        assert run_doctor(str(tmp_path), "--prefix", "hang", "--torch-trace", out).returncode == 1
        seq = doctor.load(str(tmp_path), "hang")[culprit].last().seq
        fr = subprocess.run([sys.executable, "-m", "torch.distributed.flight_recorder.fr_trace",
                             out, "--prefix", "smddp_trace_rank_"], capture_output=True,
                            text=True, timeout=120)
        print(fr.stdout, fr.stderr)
        assert fr.returncode == 0, fr.stderr
        assert f"Collective sequence number: {seq} has errors" in fr.stderr
        assert "COLLECTIVE_TYPE_MISMATCH" in fr.stderr and "'all_gather'" in fr.stderr
