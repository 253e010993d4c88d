# SPDX-License-Identifier: Apache-2.0
"""smdistributed.dataparallel: SMDDP's package name; the PyTorch API is under `.torch`."""
import torch_smddp as _torch_smddp

__version__ = _torch_smddp.__version__
