# SPDX-License-Identifier: Apache-2.0
"""tests/netns/hosts.sh itself: 3 hosts on one bridge reach each other by every name they are
given (nodeX, algo-N), and `cap` limits a host's link to the rate asked for, in both directions,
until lifted.

Invariant: bounded (timeouts on every process) and clean (the namespaces are deleted in a
finally). Skips when not root or ip/unshare are missing.
"""
import os
import subprocess
import sys

import pytest

import netns_hosts

pytestmark = pytest.mark.skipif(netns_hosts.skip_reason() is not None,
                                reason=str(netns_hosts.skip_reason()))

SINK = ("import socket, sys, time\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        "s.bind(('0.0.0.0', 5557)); s.listen(); print('ready', flush=True)\n"
        "c, _ = s.accept(); n = 0; t = time.monotonic()\n"
        "while True:\n"
        "    d = c.recv(1 << 16)\n"
        "    if not d: break\n"
        "    n += len(d)\n"
        "print(n, time.monotonic() - t, flush=True)\n")
SOURCE = ("import socket, sys\n"
          "s = socket.create_connection((sys.argv[1], 5557), timeout=20)\n"
          "s.sendall(b'x' * int(sys.argv[2])); s.close()\n")


def hosts(*args, timeout=30):
    return subprocess.run([netns_hosts.HOSTS_SH] + list(args), capture_output=True, text=True,
                          timeout=timeout, check=True)


def mbit_per_s(tag, src, dst, name, nbytes):
    sink = subprocess.Popen([netns_hosts.HOSTS_SH, "exec", tag, dst, sys.executable, "-c", SINK],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert sink.stdout.readline().strip() == "ready"
        hosts("exec", tag, src, sys.executable, "-c", SOURCE, name, str(nbytes), timeout=60)
        got, seconds = sink.communicate(timeout=60)[0].split()
    finally:
        sink.kill()
    assert int(got) == nbytes
    return nbytes * 8 / float(seconds) / 1e6


def test_three_hosts_names_and_link_caps():
    tag = f"nh{os.getpid() % 100000}"
    try:
        hosts("up", tag, "3")
        for name, host in (("algo-1", "a"), ("nodeb", "b"), ("algo-3", "c")):
            out = hosts("exec", tag, "b", sys.executable, "-c",
                        f"import socket; print(socket.gethostbyname('{name}'))").stdout
            assert out.strip() == f"192.0.2.{100 + 'abc'.index(host) + 1}"
        assert hosts("exec", tag, "c", "hostname").stdout.strip() == "nodec"
        hosts("cap", tag, "b", "20mbit")
        into_b = mbit_per_s(tag, "a", "b", "algo-2", 2_500_000)
        out_of_b = mbit_per_s(tag, "b", "c", "nodec", 2_500_000)
        assert 14 < into_b < 21 and 14 < out_of_b < 21, (into_b, out_of_b)
        hosts("cap", tag, "b", "off")
        assert mbit_per_s(tag, "a", "b", "nodeb", 2_500_000) > 60
    finally:
        subprocess.run([netns_hosts.HOSTS_SH, "down", tag], timeout=60, capture_output=True)
