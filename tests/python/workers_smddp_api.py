# SPDX-License-Identifier: Apache-2.0
"""Workers for test_smddp_api.py: SMDDP v1's API (smdistributed.dataparallel.torch.distributed)
driven the way SMDDP scripts drive it, every result checked against its closed form.

Invariant: a worker sets the launcher's environment (torchrun's variables, or Open MPI's) from
the harness's tcp:// rendezvous before it calls init_process_group() without arguments, as an
unchanged SMDDP script does.
"""
import os
from urllib.parse import urlparse

import torch


def _launch_env(rank, world, init_method, style, local_size):
    url = urlparse(init_method)
    os.environ.update(MASTER_ADDR=url.hostname, MASTER_PORT=str(url.port))
    if style == "torchrun":
        os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank % local_size),
                          LOCAL_WORLD_SIZE=str(local_size))
    else:  # mpirun: no LOCAL_* from torchrun; the local rank comes from the host names
        for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
            os.environ.pop(key, None)
        os.environ.update(OMPI_COMM_WORLD_RANK=str(rank), OMPI_COMM_WORLD_SIZE=str(world))


def v1_api(rank, world, init_method, style):
    import smdistributed.dataparallel.torch.distributed as dist
    from smdistributed.dataparallel.torch.parallel import DistributedDataParallel as DDPa
    from smdistributed.dataparallel.torch.parallel.distributed import (
        DistributedDataParallel as DDPb)

    assert DDPa is DDPb
    try:
        dist.get_rank()
        raise AssertionError("get_rank() before init_process_group() did not raise")
    except RuntimeError as e:
        assert "get_rank() before init_process_group()" in str(e), e
    local_size = 2 if style == "torchrun" else world
    _launch_env(rank, world, init_method, style, local_size)
    assert dist.is_available() and not dist.is_initialized()
    dist.init_process_group()
    assert dist.is_initialized()
    assert (dist.get_rank(), dist.get_world_size()) == (rank, world)
    if style == "torchrun":
        assert (dist.get_local_rank(), dist.get_local_size()) == (rank % 2, 2)
    else:  # every spawned rank is on this host
        assert (dist.get_local_rank(), dist.get_local_size()) == (rank, world)
    assert dist.get_backend() == "smddp"

    n = 7
    ones = torch.arange(n, dtype=torch.float32)
    cases = [(dist.ReduceOp.SUM, ones * world + world * (world - 1) / 2),
             (dist.ReduceOp.AVERAGE, ones + (world - 1) / 2),
             (dist.ReduceOp.MIN, ones),
             (dist.ReduceOp.MAX, ones + world - 1),
             (None, ones * world + world * (world - 1) / 2)]  # None means SUM in SMDDP
    for op, want in cases:
        t = ones + rank
        assert dist.all_reduce(t, op=op) is None
        assert torch.equal(t, want), (op, t, want)
    t = ones + rank
    work = dist.all_reduce(t, op=dist.ReduceOp.SUM, group=dist.group.WORLD, async_op=True)
    work.wait()
    assert torch.equal(t, ones * world + world * (world - 1) / 2)

    for src in range(world):
        b = torch.full((5,), float(rank))
        dist.broadcast(b, src=src)
        assert torch.equal(b, torch.full((5,), float(src)))

    out = [torch.empty(3, dtype=torch.int64) for _ in range(world)]
    dist.all_gather(out, torch.tensor([rank, rank * 10, -rank]))
    for r in range(world):
        assert out[r].tolist() == [r, r * 10, -r]

    # all_to_all_single, even and with split sizes (rank r sends r+1 elements to everyone)
    inp = torch.arange(world * 2) + 100 * rank
    outp = torch.empty(world * 2, dtype=inp.dtype)
    dist.all_to_all_single(outp, inp)
    assert outp.tolist() == [100 * s + 2 * rank + k for s in range(world) for k in range(2)]
    inp = torch.full((world * (rank + 1),), rank)
    outp = torch.empty(sum(s + 1 for s in range(world)), dtype=inp.dtype)
    dist.all_to_all_single(outp, inp, [s + 1 for s in range(world)], [rank + 1] * world)
    assert outp.tolist() == [s for s in range(world) for _ in range(s + 1)]

    dist.barrier()
    # beyond SMDDP: subgroups (SMDDP took group.WORLD only)
    if world > 1:
        evens = dist.new_group([r for r in range(world) if r % 2 == 0])
        if rank % 2 == 0:
            t = torch.tensor([float(rank)])
            dist.all_reduce(t, group=evens)
            assert t.item() == sum(r for r in range(world) if r % 2 == 0)

    # SMDDP's DDP wrapper trains like torch's: gradients averaged over the world
    torch.manual_seed(0)
    model = DDPa(torch.nn.Linear(4, 1, bias=False), broadcast_buffers=False)
    w0 = model.module.weight.detach().clone()
    x = torch.full((1, 4), float(rank + 1))
    model(x).sum().backward()
    want = torch.full((1, 4), (world + 1) / 2)  # mean over ranks of (rank + 1)
    assert torch.allclose(model.module.weight.grad, want), model.module.weight.grad
    assert torch.equal(w0, model.module.weight)
    dist.destroy_process_group()
    assert not dist.is_initialized()


def v1_refusals(rank, world, init_method):
    import smdistributed.dataparallel.torch.distributed as dist
    from smdistributed.dataparallel.torch.parallel import DistributedDataParallel

    for key in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"):
        os.environ.pop(key, None)
    assert not dist.is_available()
    for call, message in [
        (lambda: dist.init_process_group(), "not started as a distributed job"),
        (lambda: dist.init_process_group(backend="gloo"), "backend 'gloo' requested"),
        (lambda: DistributedDataParallel(torch.nn.Linear(2, 2)), "needs smdistributed"),
    ]:
        try:
            call()
            raise AssertionError(f"no error; expected {message!r}")
        except (RuntimeError, ValueError) as e:
            assert message in str(e), e
    os.environ.update(OMPI_COMM_WORLD_RANK="0", OMPI_COMM_WORLD_SIZE="1")
    os.environ.pop("MASTER_ADDR", None)
    try:
        dist.init_process_group()
        raise AssertionError("mpirun without MASTER_ADDR did not raise")
    except RuntimeError as e:
        assert "MASTER_ADDR and MASTER_PORT must be set" in str(e), e
