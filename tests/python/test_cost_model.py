# SPDX-License-Identifier: Apache-2.0
"""bench/model through the library's cost model (libsmddp_model.so): costs against closed forms (a flat ring's and a hierarchical
all_reduce's bandwidth limits on 2 hosts x 2 ranks: 1.0x and 1.5x the link; a token-bucket
link's calls: latency-bound under the burst, never faster than the busiest link's bytes), the
selector mirror, calibration recovering known parameters from rows the model itself produced
(plain and token-bucket links), and the CLI (calibrate, check, table) end to end on a synthetic
testbed.json.
Invariant: pure computation and short subprocesses; nothing outside tmp_path.
"""
import json
import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
from model_lib import calibrate, costs  # noqa: E402

MODEL = os.path.join(REPO, "bench", "model")


def ideal(nodes, per_node, rate=1e9):
    """No latency, free copies and reductions: only the link counts."""
    return costs.Machine("ideal", nodes, per_node, net_alpha=0.0, net_rate=rate, net_eff=1.0,
                         arena_alpha=0.0, copy_rate=1e30, gamma=0.0)


def test_bandwidth_limits_on_two_hosts_of_two():
    m = ideal(2, 2)
    size = 64 << 20
    ring = costs.time(m, "ring", size)
    hier = costs.time(m, "hier_split", size)
    assert ring == pytest.approx(1.5 * size / 1e9)  # 2(n-1)/n x size through one link
    assert hier == pytest.approx(size / 1e9)        # 2(H-1)/H x size per host
    assert costs.busbw(m, size, ring) / 1e9 == pytest.approx(1.0)
    assert costs.busbw(m, size, hier) / 1e9 == pytest.approx(1.5)


def test_cross_ring_threshold_mirrors_the_selector():
    # selector.cc crossRingMinBytes (algorithms_selector_test.cc checks the same values)
    assert costs.cross_ring_min_bytes(2) == 64 * 1024
    assert costs.cross_ring_min_bytes(3) == 32 * 1024 * 4 // 3
    assert costs.cross_ring_min_bytes(4) == 96 * 1024
    assert 1 << 20 < costs.cross_ring_min_bytes(128) < 2 << 20
    m = ideal(128, 8)
    block = (1 << 20) // 8  # 1 MiB over 8 ranks a node: recursive doubling across 128 nodes
    lat = costs.scaled(m, net_alpha=1e-5)
    assert costs.time(lat, "hier_split", 1 << 20) == pytest.approx(7 * (1e-5 + 8 * block / 1e9))


def test_latency_terms_count_steps():
    m = costs.Machine("lat", 4, 1, net_alpha=1e-5, net_rate=1e30, net_eff=1.0, arena_alpha=0.0,
                      copy_rate=1e30, gamma=0.0)
    assert costs.time(m, "ring", 8) == pytest.approx(2 * 3 * 1e-5)
    assert costs.time(m, "recursive_doubling", 8) == pytest.approx(2 * 1e-5)
    m5 = costs.scaled(m, nodes=5)  # not a power of two: fold and unfold across nodes
    assert costs.time(m5, "recursive_doubling", 8) == pytest.approx(4 * 1e-5)
    # msg_alpha: per message a node sends in a step; flat recursive doubling on 2 nodes x 2
    # ranks has 2 steps with both ranks of a node sending, hier_leader 1 step with one.
    busy = costs.Machine("busy", 2, 2, net_alpha=1e-5, net_rate=1e30, net_eff=1.0,
                         arena_alpha=0.0, copy_rate=1e30, gamma=0.0, msg_alpha=3e-6)
    assert costs.time(busy, "recursive_doubling", 8) == pytest.approx(2 * (1e-5 + 2 * 3e-6))
    assert costs.time(busy, "hier_leader", 8) == pytest.approx(1e-5 + 3e-6)
    assert costs.time(busy, "hier_direct", 8) == pytest.approx(1e-5 + 2 * 3e-6)
    h = costs.Machine("h", 8, 2, net_alpha=1e-5, net_rate=1e30, net_eff=1.0, arena_alpha=1e-6,
                      copy_rate=1e30, gamma=0.0)
    assert costs.time(h, "hier_direct", 8) == pytest.approx(1e-6 + 3 * 1e-5)


def test_token_bucket_link():
    plain = costs.Machine("p", 2, 2, net_alpha=30e-6, net_rate=125e6, net_eff=1.0,
                          arena_alpha=10e-6, copy_rate=1e30, gamma=0.0)
    for size in (8, 4096, 1 << 20):
        for algo in costs.applicable(plain):  # no burst: the sum of the steps
            latency, wire, _ = costs.parts(plain, algo, size)
            assert costs.time(plain, algo, size) == pytest.approx(latency + wire / 125e6)
    bucket = costs.scaled(plain, link_burst=64 * 1024)
    # 64 B: one arena synchronisation and one exchange; the bytes pass at once.
    assert costs.time(bucket, "hier_direct", 64) == pytest.approx(40e-6)
    # 4 KiB: 2 ranks x 4 KiB per direction take 65.5 us at the rate, more than the latency.
    assert costs.time(bucket, "hier_direct", 4096) == pytest.approx(2 * 4096 / 125e6)
    # 16 MiB: the latency (arena uses, ring steps) exceeds what the burst saves: the sum of the
    # steps less the burst at the rate, a little above the link's bytes (16 MiB each way).
    t = costs.time(bucket, "hier_split", 16 << 20)
    assert t == pytest.approx(costs.time(plain, "hier_split", 16 << 20) - 64 * 1024 / 125e6)
    assert (16 << 20) / 125e6 < t < 1.01 * (16 << 20) / 125e6
    # hier_leader: one sender per host, two arena synchronisations; 4 KiB once per link.
    assert costs.time(bucket, "hier_leader", 64) == pytest.approx(50e-6)
    assert costs.parts(bucket, "hier_leader", 4096)[2] == 4096
    assert costs.time(bucket, "hier_leader", 4096) == pytest.approx(50e-6)
    # 3 hosts: recursive doubling folds host 2 into host 0 and unfolds it: 3 steps on the
    # critical path, but each link carries 2 steps' bytes per direction.
    three = costs.scaled(bucket, nodes=3)
    latency, wire, busiest = costs.parts(three, "hier_direct", 4096)
    assert latency == pytest.approx(10e-6 + 3 * 30e-6)
    assert wire == pytest.approx(3 * 2 * 4096)
    assert busiest == pytest.approx(2 * 2 * 4096)
    assert costs.time(three, "hier_direct", 4096) == pytest.approx(max(latency,
                                                                        busiest / 125e6))


def test_selected_mirrors_the_selector():
    hosts = ideal(2, 2)
    assert costs.selected(hosts, 16 * 1024) == "hier_leader"
    assert costs.selected(hosts, 16 * 1024 + 4) == "hier_split"
    single = ideal(3, 1)
    assert costs.selected(single, 64 * 1024) == "recursive_doubling"
    assert costs.selected(single, 64 * 1024 + 4) == "ring"
    assert set(costs.applicable(single)) == {"ring", "recursive_doubling"}


@pytest.mark.parametrize("burst", [0, 64 * 1024])
@pytest.mark.parametrize("msg", [0.0, 6e-6])
def test_calibration_recovers_known_parameters(burst, msg):
    truth = costs.Machine("t", 2, 2, net_alpha=80e-6, net_rate=125e6, net_eff=0.7,
                          arena_alpha=10e-6, copy_rate=8e9, gamma=1 / 8e9, link_burst=burst,
                          msg_alpha=msg)
    rows = []
    for size in (8, 4096, 1 << 18, 1 << 22):
        # hierarchical (one sender per host up to 16 KiB) and flat (every rank sends): the two
        # tell msg_alpha from net_alpha
        for algo in (costs.selected(truth, size), "recursive_doubling"):
            rows.append({"size": size, "algorithm": algo,
                         "time_us": costs.time(truth, algo, size) * 1e6})
    prior = costs.scaled(truth, net_alpha=50e-6, net_eff=0.9, msg_alpha=0.0)
    fitted = calibrate.fit(prior, rows)
    assert fitted.net_alpha == pytest.approx(80e-6, rel=1e-6)
    assert fitted.net_eff == pytest.approx(0.7, rel=1e-6)
    assert fitted.msg_alpha == pytest.approx(msg, abs=1e-12)
    for r in calibrate.predict(fitted, rows):
        assert abs(r["error"]) < 1e-6


def _testbed_doc(m, rate):
    results = {}
    for backend in ("smddp", "smddp-flat"):
        rows = []
        for size in (8, 64, 512, 4096, 16384, 65536, 1 << 18, 1 << 20, 1 << 22, 1 << 24):
            if backend == "smddp":
                algo = costs.selected(m, size)
            else:
                algo = "recursive_doubling" if size <= costs.FLAT_RD_MAX_BYTES else "ring"
            rows.append({"size": size, "time_us": costs.time(m, algo, size) * 1e6,
                         "wrong": 0})
        results[backend] = rows
    meta = {"hosts": m.nodes, "per_host": m.per_node, "world": m.ranks, "rate": rate,
            "cap_gbps": m.net_rate / 1e9}
    return {"meta": meta, "results": results, "failed": {}}


def test_cli_calibrate_check_table(tmp_path):
    truth = costs.Machine("t", 2, 2, net_alpha=90e-6, net_rate=125e6, net_eff=0.75,
                          arena_alpha=3e-6, copy_rate=8e9, gamma=1 / 8e9, msg_alpha=7e-6,
                          link_burst=64 * 1024)  # bench/model's testbed machine and priors
    bed = tmp_path / "testbed.json"
    bed.write_text(json.dumps(_testbed_doc(truth, "1gbit")))
    other = tmp_path / "other.json"  # 3 hosts at half the rate, same network behaviour
    other.write_text(json.dumps(_testbed_doc(costs.scaled(truth, nodes=3, net_rate=62.5e6),
                                             "500mbit")))
    params = tmp_path / "params.json"
    run = [sys.executable, MODEL]
    res = subprocess.run(run + ["calibrate", str(bed), "--out", str(params)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    p = json.loads(params.read_text())
    assert p["net_alpha"] == pytest.approx(90e-6, rel=1e-4)
    assert p["net_eff"] == pytest.approx(0.75, rel=1e-4)
    assert p["msg_alpha"] == pytest.approx(7e-6, rel=1e-4)
    pooled = tmp_path / "pooled.json"  # two runs of one testbed: the same fit
    res = subprocess.run(run + ["calibrate", str(bed), str(bed), "--out", str(pooled)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert json.loads(pooled.read_text())["net_eff"] == pytest.approx(0.75, rel=1e-4)
    res = subprocess.run(run + ["calibrate", str(bed), str(other)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "another testbed" in res.stderr, res.stderr
    res = subprocess.run(run + ["check", str(params), str(bed), str(other)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "3x2 @ 500mbit" in res.stdout and "largest error: 0 %" in res.stdout, res.stdout
    table = tmp_path / "table.md"
    res = subprocess.run(run + ["table", str(params), "--out", str(table)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    text = table.read_text()
    rows = [l for l in text.splitlines() if l.startswith("| ") and l.split("|")[1].strip().isdigit()]
    assert len(rows) == 2 * 10 * 3  # all_reduce and all_to_all: 2 ... 1024 nodes x 3 sizes
    assert "| 1024 | 8192 |" in text and "NCCL" in text


def test_all_to_all_is_bound_by_the_bytes_every_algorithm_must_send():
    """A node sends L (n - L) blocks across whatever the algorithm: on 2 x 2, busbw is 0.75x the
    link ((n-1)/n of the buffer per rank over 2 of 4 blocks leaving each rank); on 3 x 2, each
    node sends 4/3 of a rank's buffer."""
    size = 64 << 20
    m = ideal(2, 2)
    for algo in ("pairwise", "hier", "hier_leader"):
        t = costs.time(m, algo, size, "all_to_all")
        assert t == pytest.approx(size / 1e9), algo
        assert costs.busbw(m, size, t, "all_to_all") / 1e9 == pytest.approx(0.75), algo
    m3 = ideal(3, 2)
    assert costs.parts(m3, "hier", size, "all_to_all")[2] == pytest.approx(4 * size / 3)
    assert costs.time(m3, "pairwise", size, "all_to_all") == pytest.approx(4 * size / 3 / 1e9)


def test_all_to_all_latency_counts_messages():
    """msg_alpha per message a node sends: pairwise L (n - 1), hier L (H - 1), hier_leader H - 1;
    net_alpha per window of 8 steps (pairwise) or once."""
    m = costs.scaled(ideal(4, 2), msg_alpha=1.0)
    assert costs.time(m, "pairwise", 8, "all_to_all") == pytest.approx(2 * 7)
    assert costs.time(m, "hier", 8, "all_to_all") == pytest.approx(2 * 3)
    assert costs.time(m, "hier_leader", 8, "all_to_all") == pytest.approx(3)
    shared = costs.scaled(m, msg_share=2)  # two nodes' stacks on the busiest CPU
    assert costs.time(shared, "hier_leader", 8, "all_to_all") == pytest.approx(6)
    assert costs.time(shared, "hier_leader", 8) == pytest.approx(2 * costs.time(m, "hier_leader", 8))
    big = costs.scaled(ideal(16, 2), net_alpha=1.0)  # 31 steps: 4 windows
    assert costs.time(big, "pairwise", 32, "all_to_all") == pytest.approx(4)
    assert costs.time(big, "hier", 32, "all_to_all") == pytest.approx(1)


def test_all_to_all_selected_mirrors_the_selector():
    m = ideal(2, 2)
    assert costs.selected(m, 16 * 1024, "all_to_all") == "hier_leader"
    assert costs.selected(m, 16 * 1024 + 4, "all_to_all") == "hier"
    assert costs.selected(m, 64 * 1024, "all_to_all") == "hier"        # 16 KiB blocks
    assert costs.selected(m, 64 * 1024 + 4, "all_to_all") == "pairwise"
    assert costs.selected(ideal(1, 4), 64, "all_to_all") == "arena"  # one host: the arena
    assert costs.applicable(ideal(3, 1), "all_to_all") == ["pairwise"]


def test_all_to_all_calibration_recovers_known_parameters():
    truth = costs.Machine("t", 2, 2, net_alpha=40e-6, net_rate=125e6, net_eff=0.8,
                          arena_alpha=3e-6, copy_rate=8e9, gamma=1 / 8e9, link_burst=64 * 1024,
                          msg_alpha=5e-6)
    rows = []
    for size in (64, 4096, 1 << 18, 1 << 22):
        for algo in (costs.selected(truth, size, "all_to_all"), "pairwise"):
            rows.append({"size": size, "algorithm": algo, "collective": "all_to_all",
                         "time_us": costs.time(truth, algo, size, "all_to_all") * 1e6})
    fitted = calibrate.fit(costs.scaled(truth, net_alpha=10e-6, net_eff=0.9, msg_alpha=0.0), rows)
    assert fitted.net_alpha == pytest.approx(40e-6, rel=1e-6)
    assert fitted.net_eff == pytest.approx(0.8, rel=1e-6)
    assert fitted.msg_alpha == pytest.approx(5e-6, rel=1e-6)


def test_cli_check_costs_an_all_to_all_run_with_its_algorithms(tmp_path):
    truth = costs.Machine("t", 2, 2, net_alpha=90e-6, net_rate=125e6, net_eff=0.75,
                          arena_alpha=3e-6, copy_rate=8e9, gamma=1 / 8e9, msg_alpha=7e-6,
                          link_burst=64 * 1024)
    results = {}
    for backend in ("smddp", "smddp-flat"):
        results[backend] = [
            {"size": size, "wrong": 0, "time_us": 1e6 * costs.time(
                truth, costs.selected(truth, size, "all_to_all") if backend == "smddp" else "pairwise",
                size, "all_to_all")}
            for size in (64, 4096, 65536, 1 << 20, 1 << 24)]
    meta = {"hosts": 2, "per_host": 2, "world": 4, "rate": "1gbit", "cap_gbps": 0.125,
            "collective": "all_to_all"}
    bed = tmp_path / "a2a.json"
    bed.write_text(json.dumps({"meta": meta, "results": results, "failed": {}}))
    params = tmp_path / "params.json"
    params.write_text(json.dumps({"net_alpha": 90e-6, "net_eff": 0.75, "arena_alpha": 3e-6,
                                  "msg_alpha": 7e-6}))
    res = subprocess.run([sys.executable, MODEL, "check", str(params), str(bed)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "all_to_all 2x2 @ 1gbit" in res.stdout and "hier_leader" in res.stdout
    assert "largest error: 0 %" in res.stdout, res.stdout


def test_cli_estimates_tabulates_estimate_against_measured(tmp_path):
    """bench/model estimates: smddp's rows of a compare.json and smddp-torch's of a testbed.json,
    only those with an estimate, ratio = estimate / measured."""
    compare = {"cells": [
        {"backend": "smddp", "status": "ok", "collective": "all_reduce", "world": 2,
         "rows": [{"size": 4096, "time_us": 20.0, "estimate_us": 10.0},
                  {"size": 1 << 20, "time_us": 200.0, "estimate_us": 300.0}]},
        {"backend": "gloo", "status": "ok", "collective": "all_reduce", "world": 2,
         "rows": [{"size": 4096, "time_us": 50.0}]}]}
    bed = {"meta": {"hosts": 2, "per_host": 2, "rate": "1gbit", "collective": "all_gather"},
           "results": {"smddp-torch": [{"size": 4096, "time_us": 100.0, "estimate_us": 80.0},
                                       {"size": 8, "time_us": 90.0}],
                       "smddp": [{"size": 4096, "time_us": 30.0}]}}
    (tmp_path / "compare.json").write_text(json.dumps(compare))
    (tmp_path / "testbed.json").write_text(json.dumps(bed))
    res = subprocess.run([sys.executable, MODEL, "estimates", str(tmp_path / "compare.json"),
                          str(tmp_path / "testbed.json"), "--out", str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    text = (tmp_path / "out" / "estimates.md").read_text()
    assert "| one host | all_reduce | 2 | 20 / 10 (0.50) | 200 / 300 (1.50) |" in text, text
    assert "| 2 hosts @ 1gbit | all_gather | 2 x 2 | 100 / 80 (0.80) | - |" in text, text
    assert "0.50 to 1.50 over 3 cells" in text
    assert (tmp_path / "out" / "estimates.png").stat().st_size > 0
    res = subprocess.run([sys.executable, MODEL, "estimates", str(tmp_path / "testbed.json")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "0.80 to 0.80" in res.stdout
