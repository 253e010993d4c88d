# SPDX-License-Identifier: Apache-2.0
"""SMDDP's import paths: the v2 registration module and the v1 API
(smdistributed.dataparallel.torch.distributed, ...parallel.DistributedDataParallel) with values
checked over worlds 1, 3 and 5, launched the way torchrun and mpirun start ranks.

Invariant: bounded (harness timeouts); every check compares to a closed form.
"""
import subprocess
import sys

import pytest

import harness
import workers_smddp_api


@pytest.mark.parametrize("world", [1, 3, 5])
def test_v1_api_under_torchrun_environment(world):
    harness.run(workers_smddp_api.v1_api, world, init="tcp", timeout=120, args=("torchrun",))


def test_v1_api_under_mpirun_environment():
    harness.run(workers_smddp_api.v1_api, 3, init="tcp", timeout=120, args=("mpirun",))


def test_v1_refusals_name_what_is_missing():
    harness.run(workers_smddp_api.v1_refusals, 1, init="tcp", timeout=60)


def test_v2_import_registers_the_backend_once():
    code = ("import smdistributed.dataparallel.torch.torch_smddp as m, torch_smddp, "
            "smdistributed.dataparallel as dp, torch.distributed as d; "
            "assert m.is_registered() and m.BACKEND_NAME == 'smddp'; "
            "assert dp.__version__ == torch_smddp.__version__; "
            "import smdistributed.dataparallel.torch.torch_smddp; print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
