# SPDX-License-Identifier: Apache-2.0
"""SageMaker SMDDP's import paths, served by torch_smddp (see README "Coming from SMDDP").

Scripts written for Amazon's `smdistributed.dataparallel` run unchanged: its v2 registration
module and its v1 API map onto torch.distributed with the "smddp" backend. This package holds
no communication code of its own.
"""
