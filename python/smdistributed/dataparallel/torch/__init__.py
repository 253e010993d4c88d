# SPDX-License-Identifier: Apache-2.0
"""smdistributed.dataparallel.torch: SMDDP's PyTorch API.

    import smdistributed.dataparallel.torch.torch_smddp        # v2: registers backend "smddp"
    import smdistributed.dataparallel.torch.distributed as dist  # v1: dist.init_process_group()

Invariant: importing this package starts nothing and creates no group; the submodules are
imported on demand (a package named `torch` inside this one never shadows the real torch:
every module here imports torch absolutely).
"""
