# SPDX-License-Identifier: Apache-2.0
"""SMDDP v1's DistributedDataParallel: torch's DDP over the group that
`smdistributed.dataparallel.torch.distributed.init_process_group()` made.

SMDDP's signature is kept (module, device_ids, output_device, broadcast_buffers, process_group,
bucket_cap_mb); unlike SMDDP, buffers are broadcast when asked (SMDDP required
broadcast_buffers=False) and any process group works, not only WORLD. Further keyword arguments
go to torch's DDP unchanged (find_unused_parameters, gradient_as_bucket_view, ...).

Invariant: constructing it before init_process_group() raises a clear error, not torch's.
"""
import torch.distributed as dist
import torch.nn.parallel as _parallel

_DEFAULT_BUCKET_CAP_MB = 25  # SMDDP's and torch's default


class DistributedDataParallel(_parallel.DistributedDataParallel):
    def __init__(self, module, device_ids=None, output_device=None, broadcast_buffers=True,
                 process_group=None, bucket_cap_mb=None, **kwargs):
        if not dist.is_initialized():
            raise RuntimeError(
                "smdistributed.dataparallel: DistributedDataParallel needs "
                "smdistributed.dataparallel.torch.distributed.init_process_group() first")
        super().__init__(
            module,
            device_ids=device_ids,
            output_device=output_device,
            broadcast_buffers=broadcast_buffers,
            process_group=process_group,
            bucket_cap_mb=_DEFAULT_BUCKET_CAP_MB if bucket_cap_mb is None else bucket_cap_mb,
            **kwargs,
        )
