# SPDX-License-Identifier: Apache-2.0
"""smdistributed.dataparallel.torch.parallel: SMDDP v1's DistributedDataParallel."""
from .distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
