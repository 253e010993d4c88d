# SPDX-License-Identifier: Apache-2.0
"""Resource leaks through torch: 200 create / use / destroy cycles of a smddp process group in one
process per rank (2 ranks) -- the default group (init_process_group / destroy_process_group) or a
subgroup (new_group / destroy_process_group(group)) -- leave open file descriptors, threads and
RSS flat between cycle 20 and cycle 200 (small slack for RSS: allocator noise).
The per-rank samples are printed (pytest -s) so a leak can be measured, not only detected.
"""
import os

import pytest

import harness
import workers_faults

CYCLES, MARK = 200, 20
SLACK = {"fds": 0, "threads": 0, "rss_mib": 16.0}


@pytest.mark.parametrize("mode", ["default", "subgroup"])
def test_create_destroy_cycles_do_not_leak(mode, tmp_path):
    try:
        harness.run(workers_faults.init_destroy_cycles, 2, init="tcp", timeout=170,
                    args=(mode, CYCLES, MARK, SLACK, str(tmp_path)))
    finally:
        for name in sorted(os.listdir(tmp_path)):
            print(name, open(tmp_path / name).read().strip())
