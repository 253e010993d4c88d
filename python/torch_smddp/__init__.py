# SPDX-License-Identifier: Apache-2.0
"""torch_smddp: the "smddp" torch.distributed backend.

    import torch_smddp                        # registers backend "smddp"
    dist.init_process_group(backend="smddp")

Invariant: importing (or reloading) this package is idempotent; the backend is registered once.
"""
import torch
import torch.distributed  # noqa: F401  (registers the c10d classes _C derives from)

from . import _C, roles  # roles: one group per torchrun role (heterogeneous jobs)
from ._backend import BACKEND_NAME, backend_of, create_backend, is_registered, register

__version__ = _C.engine_version()
ProcessGroupSmddp = _C.ProcessGroupSmddp

register()

__all__ = [
    "BACKEND_NAME",
    "ProcessGroupSmddp",
    "backend_of",
    "create_backend",
    "is_registered",
    "register",
]
