# SPDX-License-Identifier: Apache-2.0
"""torch's reconfigure API on smddp (torch >= 2.15), 4 spawned processes on one TCPStore:
init_process_group(enable_reconfigure=True) joins nothing (a collective says so); the handle is
stable; generations of 2 of them, all 4 in reverse (ranks by position), a set (ranks by host and
pid); a uuid used before, another backend's handle, a handle twice, a list without the caller,
a handle of another group are refused with the group untouched; a collective still pending in
the generation that is replaced fails naming the reconfigure. And 100 reconfigures in a row
leave fds, threads and RSS flat.
"""
import os

import pytest
import torch

import harness
import workers_reconfigure

pytestmark = pytest.mark.skipif(
    not hasattr(torch.distributed, "_reconfigure"), reason="reconfigure needs torch >= 2.15")


def test_generations_handles_and_refusals():
    harness.run(workers_reconfigure.api, 4, init="tcp", timeout=120)


def test_hundred_reconfigures_leak_nothing(tmp_path):
    slack = {"fds": 0, "threads": 0, "rss_mib": 16.0}
    try:
        harness.run(workers_reconfigure.cycles, 2, init="tcp", timeout=240,
                    args=(100, 10, slack, str(tmp_path)))
    finally:
        for name in sorted(os.listdir(tmp_path)):
            print(name, open(tmp_path / name).read().strip())
