# SPDX-License-Identifier: Apache-2.0
"""pytest setup for the torch_smddp suite: find the package (installed, or the in-tree dev build
under python/), and stop with a clear error when the extension is not built.
Invariant: spawned ranks see the same torch_smddp as the test process (sys.path and PYTHONPATH).
"""
import os
import sys

import pytest

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


def pytest_collection_modifyitems(config, items):
    # A suite that skips itself when the extension is missing could never fail: refuse instead.
    if _IMPORT_ERROR is not None:
        raise pytest.UsageError(
            f"torch_smddp cannot be imported ({_IMPORT_ERROR}); build it first: "
            "pip install --no-build-isolation . (or see python/README.md)"
        )
