# SPDX-License-Identifier: Apache-2.0
"""FSDP2 on buffers smddp allocates (workers_fsdp_alloc.py), worlds 2 and 4."""
import pytest
import torch

import harness
import workers_fsdp_alloc

pytestmark = pytest.mark.skipif(
    not hasattr(torch.distributed.ProcessGroup, "supports_tensor_alloc")
    and not hasattr(torch._C._distributed_c10d.Backend, "supports_tensor_alloc"),
    reason="this torch has no backend tensor allocation (torch >= 2.15)")


@pytest.mark.parametrize("world", [2, 4])
def test_fsdp2_on_smddp_allocated_buffers(world):
    harness.run(workers_fsdp_alloc.suite, world, init="tcp", timeout=240)
