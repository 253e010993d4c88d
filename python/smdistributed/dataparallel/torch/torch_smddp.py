# SPDX-License-Identifier: Apache-2.0
"""SMDDP v2's registration module: importing it registers the "smddp" torch.distributed backend.

    import smdistributed.dataparallel.torch.torch_smddp
    torch.distributed.init_process_group(backend="smddp")

Invariant: the same registration as `import torch_smddp` (idempotent: both imports together
register once).
"""
import torch_smddp as _torch_smddp
from torch_smddp import BACKEND_NAME, ProcessGroupSmddp, backend_of, is_registered  # noqa: F401

__version__ = _torch_smddp.__version__
