# SPDX-License-Identifier: Apache-2.0
"""Hostile clients against every TCP port a running job opens (127.0.0.1 only, bounded): the
engine tools' TCP store (the job holding a secret) and every rank's liveness port and libfabric
listeners, and a torch job's ports, attacked while the job rendezvous and runs collectives
(hostile_client.py: connect-and-close floods, random bytes, HTTP requests, half headers held open,
clients that never read, well-formed store requests without the secret). Each job
must finish with every result right, no rank declared dead, and the store server's memory and
descriptors bounded and back afterwards. The figures printed are the ones SECURITY.md quotes.
"""
import os
import subprocess
import tempfile
import time

import pytest

import harness
import hostile_client
import workers_hostile

# Memory, descriptors and bounded times under a flood: nothing else runs beside them.
pytestmark = pytest.mark.alone

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(REPO, os.environ.get("BUILD_DIR", "build"), "bench")


def _engine_job(attack, secret=""):
    """3 ranks of all_reduce_perf over tcp with rank 0 serving the TCP store; with `attack`, every
    port they listen on is attacked from the start (rendezvous included) until each was attacked
    once and at least 4 s passed (at most 20 s). Returns (exit codes, outputs, attacker, rank 0's
    descriptors: first, peak, after the attack; its peak RSS)."""
    port = harness.free_port()
    env = dict(os.environ, SMDDP_STORE=f"tcp:127.0.0.1:{port}", SMDDP_WORLD_SIZE="3",
               SMDDP_PROVIDER="tcp", SMDDP_FABRIC_ADDR="127.0.0.1", SMDDP_TIMEOUT_MS="60000",
               SMDDP_JOB_SECRET=secret)
    cmd = [os.path.join(BENCH, "all_reduce_perf"), "-b", "8", "-e", "256K", "-f", "4", "-n",
           "12000" if attack else "2000", "-w", "20", "-c", "1"]
    with tempfile.TemporaryDirectory() as tmp:
        logs = [open(os.path.join(tmp, f"rank{r}.log"), "w+") for r in range(3)]
        ranks = [subprocess.Popen(cmd, env=dict(env, SMDDP_RANK=str(r)), stdout=logs[r],
                                  stderr=subprocess.STDOUT) for r in range(3)]
        pids = [p.pid for p in ranks]
        attacker = hostile_client.Attacker(
            lambda: hostile_client.listening_ports(pids) if all(p.poll() is None for p in ranks)
            else [])
        if attack:
            attacker.start()
        try:
            while port not in hostile_client.listening_ports(pids[:1]) and ranks[0].poll() is None:
                time.sleep(0.01)
            fds0 = hostile_client.fd_count(pids[0])
            peak_rss, peak_fds = 0, fds0
            start = time.monotonic()
            while ranks[0].poll() is None and time.monotonic() < start + 20 and (
                    not attack or time.monotonic() < start + 4 or attacker.rounds < 1):
                try:
                    peak_rss = max(peak_rss, hostile_client.rss_bytes(pids[0]))
                    peak_fds = max(peak_fds, hostile_client.fd_count(pids[0]))
                except OSError:
                    break
                time.sleep(0.05)
            attacker.stop()
            time.sleep(TcpStoreHandshakeS + 0.5)
            after_fds = hostile_client.fd_count(pids[0]) if ranks[0].poll() is None else None
            codes = [p.wait(timeout=240) for p in ranks]
        finally:
            attacker.stop()
            for p in ranks:
                if p.poll() is None:
                    p.kill()
        out = []
        for f in logs:
            f.seek(0)
            out.append(f.read())
            f.close()
    return codes, out, attacker, (fds0, peak_fds, after_fds), peak_rss


def test_engine_job_and_its_tcp_store_under_attack():
    secret = "hostile-test-job-secret-0123456789"
    _, _, _, quiet_fds, quiet_rss = _engine_job(attack=False, secret=secret)
    codes, out, attacker, (fds0, peak_fds, after_fds), peak_rss = _engine_job(True, secret)
    print(f"[ figures ] engine job under attack: {attacker.connections} hostile connections to "
          f"{len(attacker.ports_attacked)} ports, each at least {attacker.rounds} times; store server (rank 0) "
          f"peak RSS {peak_rss / 2**20:.1f} MiB (unattacked {quiet_rss / 2**20:.1f} MiB), "
          f"descriptors {fds0} -> {peak_fds} peak -> {after_fds} after (unattacked peak "
          f"{quiet_fds[1]}); {attacker.foreign_refused} well-formed requests without the "
          f"secret refused, {attacker.foreign_answered} answered")
    assert codes == [0, 0, 0], "\n".join(out)
    assert "Out of bounds values : 0 OK" in out[0], out[0]
    for text in out:
        assert "is gone" not in text and "declared dead" not in text, text
    # the store and the ranks' liveness ports and libfabric listeners, each attacked
    assert len(attacker.ports_attacked) >= 4 and attacker.rounds >= 1, attacker.ports_seen
    assert attacker.foreign_answered == 0 and attacker.foreign_refused >= 3
    assert peak_rss - quiet_rss < 64 * 2**20
    assert peak_fds - fds0 < 300  # the handshake cap (128) plus the job's own
    assert after_fds is not None, "the job ended before the check: make it longer"
    assert after_fds <= max(fds0, quiet_fds[1]) + 5, (quiet_fds, after_fds)  # the job's own, at most


TcpStoreHandshakeS = 2.0  # the server closes a connection without a handshake after this


def test_torch_job_ports_under_attack(monkeypatch):
    monkeypatch.setenv("SMDDP_PROVIDER", "tcp")
    monkeypatch.setenv("SMDDP_FABRIC_ADDR", "127.0.0.1")
    with tempfile.TemporaryDirectory() as pid_dir:
        def ports():
            pids = [int(n) for n in os.listdir(pid_dir) if n.isdigit()]
            return hostile_client.listening_ports(pids)

        attacker = hostile_client.Attacker(ports).start()
        try:
            # A file rendezvous: every port the ranks listen on is smddp's (torch's TCPStore
            # is torch's, outside this test).
            harness.run(workers_hostile.collectives_for, 3, init="file", timeout=120,
                        args=(pid_dir, 12.0))
        finally:
            attacker.stop()
    print(f"[ figures ] torch job under attack: {attacker.connections} hostile connections to "
          f"{len(attacker.ports_attacked)} ports")
    assert len(attacker.ports_attacked) >= 3, attacker.ports_seen
