# SPDX-License-Identifier: Apache-2.0
"""pytest setup for the torch_smddp suite: find the package (installed, or the in-tree dev build
under python/), and stop with a clear error when the extension is not built.
Invariant: spawned ranks see the same torch_smddp as the test process (sys.path and PYTHONPATH),
and one intra-op thread each (OMP_NUM_THREADS=1 unless set).
"""
import os
import sys

import pytest

# Several ranks share this machine's cores in every test: one intra-op thread each, as torchrun
# gives every rank of a multi-process job. Left at the core count, each rank's OpenMP pool spins
# after every parallel op on the CPUs its peers need (a fifth of the CPU time of the tests that
# spawn ranks, on 2 cores).
# Set before torch is imported here: libgomp reads it once, and the ranks inherit it.
os.environ.setdefault("OMP_NUM_THREADS", "1")

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)


def _locate():
    try:
        import torch_smddp  # noqa: F401

        return None
    except ImportError:
        pass
    sys.path.insert(0, os.path.join(REPO, "python"))  # PYTHONPATH for the workers: below
    try:
        import torch_smddp  # noqa: F401

        return None
    except ImportError as e:
        return str(e)


_IMPORT_ERROR = _locate()
if _IMPORT_ERROR is None:
    import torch_smddp

    pkg_dir = os.path.dirname(os.path.dirname(os.path.abspath(torch_smddp.__file__)))
    if pkg_dir not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        os.environ["PYTHONPATH"] = os.pathsep.join(
            [pkg_dir] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        )


def pytest_configure(config):
    # scripts/run.sh runs the suite on several workers (pytest-xdist), then the tests marked
    # `alone` by themselves: those measure this machine's rates or times, which tests running
    # beside them would skew.
    config.addinivalue_line(
        "markers", "alone: measures rates or times; runs with no other test beside it"
    )


def pytest_collection_modifyitems(config, items):
    # A suite that skips itself when the extension is missing could never fail: refuse instead.
    if _IMPORT_ERROR is not None:
        raise pytest.UsageError(
            f"torch_smddp cannot be imported ({_IMPORT_ERROR}); build it first: "
            "pip install --no-build-isolation . (or see python/README.md)"
        )
