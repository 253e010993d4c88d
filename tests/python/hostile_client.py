# SPDX-License-Identifier: Apache-2.0
"""A hostile client for the tests: what a port scanner, an HTTP scraper or a stray process does to
the TCP ports a running job opens. 127.0.0.1 only, bounded in count and time.

listening_ports(pids) finds the TCP ports the given processes listen on (from /proc);
Attacker(ports_fn).start() attacks the ports ports_fn() names, one at a time (the least attacked
first), on a thread until stop(): floods of connect-and-close, random bytes, HTTP requests,
half-sent headers held open, clients that send requests and never read, well-formed store
requests without the job's secret. Each turn's connections are closed before the next;
`rounds` counts how often every port seen was attacked.
"""
import os
import random
import socket
import struct
import threading
import time

# One turn at one port (a port's listener sees each kind every turn).
ROUND_CONNECT_CLOSE = 100
ROUND_RANDOM = 20
ROUND_HTTP = 10
ROUND_HELD = 100
ROUND_NON_READERS = 3
ROUND_FOREIGN = 3

# smddp's store protocol (src/store/store_wire.h): a client hello without a secret, then a GET.
_HELLO = b"SMDDPstr" + struct.pack("<HHI", 2, 0, 0) + b"n" * 16
_GET = struct.pack("<BIIq", 2, 3, 0, 0) + b"key"


def _socket_inodes(pid):
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        pass
    return inodes


def listening_ports(pids):
    """TCP ports in LISTEN state owned by any of pids, reachable on 127.0.0.1."""
    inodes = set()
    for pid in pids:
        inodes |= _socket_inodes(pid)
    ports = set()
    for table, loopbacks in (("/proc/net/tcp", ("0100007F", "00000000")),
                             ("/proc/net/tcp6", ("00000000000000000000000001000000",
                                                 "00000000000000000000000000000000"))):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            f = line.split()
            addr, port = f[1].split(":")
            if f[3] == "0A" and f[9] in inodes and addr in loopbacks:
                ports.add(int(port, 16))
    return sorted(ports)


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def fd_count(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


class Attacker:
    def __init__(self, ports_fn, seed=1):
        self._ports_fn = ports_fn  # called each round: ports may appear as the job starts
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.rounds = 0
        self.connections = 0
        self.ports_seen = set()
        self.ports_attacked = set()
        self.foreign_answered = 0  # well-formed store requests without the secret that got an answer
        self.foreign_refused = 0   # ... that got the "secret required" verdict

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _connect(self, port):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(0.5)
        try:
            s.connect(("127.0.0.1", port))
        except OSError:
            s.close()
            return None
        self.connections += 1
        return s

    @staticmethod
    def _send(s, data):
        try:
            s.sendall(data)
        except OSError:
            pass

    def _round(self, port):
        held = []
        try:
            for _ in range(ROUND_CONNECT_CLOSE):
                s = self._connect(port)
                if s:
                    s.close()
            for _ in range(ROUND_RANDOM):
                s = self._connect(port)
                if s:
                    self._send(s, self._rng.randbytes(self._rng.randint(1, 4096)))
                    s.close()
            for _ in range(ROUND_HTTP):
                s = self._connect(port)
                if s:
                    self._send(s, b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                    held.append(s)
            for _ in range(ROUND_HELD):
                s = self._connect(port)
                if s:
                    self._send(s, b"\x01\x05")
                    held.append(s)
            for _ in range(ROUND_NON_READERS):
                s = self._connect(port)
                if s:
                    s.setblocking(False)
                    self._send(s, self._rng.randbytes(64) * 64)
                    held.append(s)
            for _ in range(ROUND_FOREIGN):
                self._foreign_request(port)
            self._stop.wait(0.1)
        finally:
            for s in held:
                s.close()

    def _foreign_request(self, port):
        """A well-formed store request from a process without the job's secret."""
        s = self._connect(port)
        if not s:
            return
        try:
            s.sendall(_HELLO + _GET)
            answer = b""
            while len(answer) < 64 + 5:
                chunk = s.recv(64 + 5 - len(answer))
                if not chunk:
                    break
                answer += chunk
        except OSError:
            answer = b""
        finally:
            s.close()
        if len(answer) >= 13 and answer[:8] == b"SMDDPstr":
            if answer[12] == 2:
                self.foreign_refused += 1
            elif len(answer) == 64 + 5:
                self.foreign_answered += 1

    def _run(self):
        # One port per turn, the least attacked of those open now: ports that appear while the
        # job starts (its ranks' listeners) are reached at once, not after a round of the others.
        attacked = {}
        while not self._stop.is_set():
            ports = self._ports_fn()
            if not ports:
                self._stop.wait(0.05)
                continue
            self.ports_seen |= set(ports)
            port = min(ports, key=lambda p: attacked.get(p, 0))
            self._round(port)
            attacked[port] = attacked.get(port, 0) + 1
            self.ports_attacked.add(port)
            self.rounds = min(attacked.get(p, 0) for p in self.ports_seen)
