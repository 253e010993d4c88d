# SPDX-License-Identifier: Apache-2.0
"""Rank bodies of test_job_secret.py (run by harness.run in their own processes)."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist

import torch_smddp
from torch_smddp import _C


def trains_with_secret(rank, world, init_method):
    assert _C._has_job_secret()
    dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world)
    for n in (0, 1, 7, 1000):
        t = torch.full((n,), float(rank + 1))
        dist.all_reduce(t)
        assert torch.equal(t, torch.full((n,), world * (world + 1) / 2.0)), (n, t[:4])
    root = world - 1
    b = torch.arange(5, dtype=torch.float64) * (rank == root)
    dist.broadcast(b, src=root)
    assert torch.equal(b, torch.arange(5, dtype=torch.float64))
    # What smddp writes into torch's store is signed; a forgery in its place is refused.
    store = dist.distributed_c10d._get_default_store()
    sealed = _C._seal_value("k", b"value")
    assert sealed[:5] == b"value" and len(sealed) == 5 + 32
    assert _C._open_value("k", sealed) == b"value"
    for forged in (b"value", sealed[:-1] + bytes([sealed[-1] ^ 1])):
        try:
            _C._open_value("k", forged)
        except RuntimeError as e:
            assert "store key 'k' refused" in str(e), e
        else:
            raise AssertionError("a forged value was accepted")
    store.set(f"probe/{rank}", "x")
    dist.barrier()
    dist.destroy_process_group()


def secrets_differ(rank, world, init_method):
    # Rank 0 of another job (another secret) cannot join: bootstrap refuses its entries, and
    # every rank fails within its timeout with an error naming the refused key.
    os.environ["SMDDP_JOB_SECRET"] = ("another-job-secret-" if rank == 0 else "this-job-secret-") * 2
    assert _C._has_job_secret()
    try:
        dist.init_process_group("smddp", init_method=init_method, rank=rank, world_size=world,
                                timeout=timedelta(seconds=20))
        t = torch.ones(4)
        dist.all_reduce(t)
    except Exception as e:  # noqa: BLE001 - the message is what the test checks
        assert "refused" in str(e) and "signature" in str(e), str(e)
        return
    raise AssertionError(f"rank {rank} ran a collective with a peer of another secret")
