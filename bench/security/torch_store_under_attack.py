# SPDX-License-Identifier: Apache-2.0
"""torch's TCPStore under the traffic smddp's TCP store is tested against (tests/unit/
store_hostile_server_test.cc), for SECURITY.md's comparison: 1000 connections that each send two
bytes and stay open, then a new client's connect + set + get; an HTTP request. 127.0.0.1 only,
bounded.

    .venv/bin/python bench/security/torch_store_under_attack.py
"""
import resource
import socket
import sys
import time
from datetime import timedelta

import torch.distributed as dist


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def serve_one(port, timeout_s=10):
    start = time.monotonic()
    try:
        client = dist.TCPStore("127.0.0.1", port, is_master=False,
                               timeout=timedelta(seconds=timeout_s))
        client.set("probe", "ok")
        assert client.get("probe") == b"ok"
        return f"{(time.monotonic() - start) * 1000:.0f} ms"
    except Exception as e:  # noqa: BLE001 - the outcome is the figure
        return f"failed after {time.monotonic() - start:.1f} s ({type(e).__name__})"


def main():
    resource.setrlimit(resource.RLIMIT_NOFILE, (8192, 8192))
    port = free_port()
    server = dist.TCPStore("127.0.0.1", port, is_master=True, wait_for_workers=False,
                           timeout=timedelta(seconds=30))
    import torch
    print(f"torch {torch.__version__} TCPStore")
    print(f"quiet: new client served in {serve_one(port)}")

    held = []
    for _ in range(1000):
        s = socket.create_connection(("127.0.0.1", port), timeout=1)
        s.sendall(b"\x01\x05")
        held.append(s)
    time.sleep(0.3)
    print(f"1000 half-header connections held: new client served in {serve_one(port)}")
    for s in held:
        s.close()

    s = socket.create_connection(("127.0.0.1", port), timeout=1)
    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    s.settimeout(2)
    try:
        closed = s.recv(1) == b""
    except socket.timeout:
        closed = False
    s.close()
    print(f"HTTP request: connection {'closed' if closed else 'left open for 2 s and more'}; "
          f"new client served in {serve_one(port)}")


if __name__ == "__main__":
    sys.exit(main())
