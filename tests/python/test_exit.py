# SPDX-License-Identifier: Apache-2.0
"""Interpreter exit with collectives still finishing: a script that posts non-contiguous async
all_reduces (finished on the group's completion thread, which must free Python-owned tensors)
and exits at once, without destroy_process_group. Before torch_smddp shut its groups down from
an atexit hook, the completion thread met a finalizing interpreter: abort, crash or hang at exit
in about half the runs. Each run must exit 0, quietly, within its bound: with a group from
init_process_group, and with a ProcessGroupSmddp built by hand (the hook covers both).
"""
import subprocess
import sys

import pytest

SCRIPTS = {
    "init_process_group": """
import sys, torch, torch.distributed as dist, torch_smddp
dist.init_process_group("smddp", init_method=sys.argv[1], rank=0, world_size=1)
all_reduce = lambda t: dist.all_reduce(t, async_op=True)
""",
    "by_hand": """
import sys, torch, torch.distributed as dist, torch_smddp
store = dist.FileStore(sys.argv[1][len("file://"):], 1)
pg = torch_smddp.ProcessGroupSmddp(store, 0, 1, 30.0)
all_reduce = lambda t: pg.allreduce([t])
""",
}
LOOP = """
for i in range(3000):
    t = torch.ones(64, 2).t()  # strided: its result is copied back on the completion thread
    all_reduce(t)  # its Work is dropped at once
"""


@pytest.mark.parametrize("made", sorted(SCRIPTS))
def test_exit_with_collectives_finishing(tmp_path, made):
    for run in range(5):
        store = tmp_path / f"store{run}"
        res = subprocess.run([sys.executable, "-c", SCRIPTS[made] + LOOP, f"file://{store}"],
                             capture_output=True, text=True, timeout=60)
        bad = [w for w in ("terminate called", "terminated with signal", "Fatal Python error",
                           "Traceback") if w in res.stderr]
        assert res.returncode == 0 and not bad, (
            f"run {run}: exit {res.returncode}, {bad}:\n{res.stderr[-2000:]}")
