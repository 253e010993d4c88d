# SPDX-License-Identifier: Apache-2.0
"""SMDDP v1's `smdistributed.dataparallel.torch.distributed`, mapped onto torch.distributed with
the "smddp" backend.

    import smdistributed.dataparallel.torch.distributed as dist
    dist.init_process_group()
    torch.cuda.set_device(dist.get_local_rank())

The rank and the world come from the launcher's environment: torchrun's (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT; `python -m torch_smddp.launch` sets them
on SageMaker-style hosts) or Open MPI's (OMPI_COMM_WORLD_*, with MASTER_ADDR/MASTER_PORT given).
Unlike SMDDP, every function takes any group (torch.distributed.new_group works), AVERAGE is a
reduction like the others, and the world may mix CPU-only and GPU hosts.

Invariant: every function here is torch.distributed's own once init_process_group() ran, so a
script may mix this API with torch.distributed freely; a call before it raises an error that
says so.
"""
import os
import socket

import torch.distributed as _dist

import torch_smddp

_LOCAL = {}  # local_rank / local_size when the launcher did not say (computed at init)


class ReduceOp:
    """SMDDP's reduction names: AVERAGE, SUM, MIN, MAX (torch's AVG, PRODUCT, ... work too)."""

    SUM = _dist.ReduceOp.SUM
    AVERAGE = _dist.ReduceOp.AVG
    AVG = _dist.ReduceOp.AVG
    MIN = _dist.ReduceOp.MIN
    MAX = _dist.ReduceOp.MAX
    PRODUCT = _dist.ReduceOp.PRODUCT


group = _dist.group  # group.WORLD, as in SMDDP


def _launch_env():
    """{RANK, WORLD_SIZE, LOCAL_RANK?, LOCAL_WORLD_SIZE?} from torchrun's or Open MPI's env."""
    env = os.environ
    if "RANK" in env and "WORLD_SIZE" in env:
        keys = {"RANK": "RANK", "WORLD_SIZE": "WORLD_SIZE", "LOCAL_RANK": "LOCAL_RANK",
                "LOCAL_WORLD_SIZE": "LOCAL_WORLD_SIZE"}
    elif "OMPI_COMM_WORLD_RANK" in env and "OMPI_COMM_WORLD_SIZE" in env:
        keys = {"RANK": "OMPI_COMM_WORLD_RANK", "WORLD_SIZE": "OMPI_COMM_WORLD_SIZE",
                "LOCAL_RANK": "OMPI_COMM_WORLD_LOCAL_RANK",
                "LOCAL_WORLD_SIZE": "OMPI_COMM_WORLD_LOCAL_SIZE"}
    else:
        return None
    out = {}
    for name, key in keys.items():
        if key not in env:
            continue
        try:
            out[name] = int(env[key])
        except ValueError:
            raise RuntimeError(f"smdistributed.dataparallel: {key}={env[key]!r} is not an "
                               "integer") from None
    return out


def is_available():
    """True when the script was started as a distributed job (by torchrun, the smddp launcher
    or mpirun), False for a plain `python train.py`."""
    return _launch_env() is not None


def init_process_group(*args, **kwargs):
    """Joins the job's world over backend "smddp". Takes torch's keyword arguments (timeout,
    init_method, store, ...); a backend other than smddp is an error."""
    backend = kwargs.pop("backend", args[0] if args else "smddp")
    if args[1:]:
        raise TypeError("smdistributed.dataparallel: init_process_group() takes keyword "
                        "arguments only (timeout=..., init_method=...)")
    if backend not in ("smddp", torch_smddp.BACKEND_NAME):
        raise ValueError(f"smdistributed.dataparallel: backend {backend!r} requested; this "
                         "API runs on 'smddp' (use torch.distributed directly for others)")
    if _dist.is_initialized():
        return
    env = _launch_env()
    if env is None and "init_method" not in kwargs and "store" not in kwargs:
        raise RuntimeError(
            "smdistributed.dataparallel: not started as a distributed job (no RANK/WORLD_SIZE "
            "from torchrun or OMPI_COMM_WORLD_* from mpirun); start it with "
            "`python -m torch_smddp.launch script.py` or torchrun")
    if env is not None and "store" not in kwargs:
        kwargs.setdefault("rank", env["RANK"])
        kwargs.setdefault("world_size", env["WORLD_SIZE"])
        if "init_method" not in kwargs and not (os.environ.get("MASTER_ADDR") and
                                                os.environ.get("MASTER_PORT")):
            raise RuntimeError("smdistributed.dataparallel: MASTER_ADDR and MASTER_PORT must "
                               "be set when the job is started by mpirun")
    _dist.init_process_group(backend=torch_smddp.BACKEND_NAME, **kwargs)
    _LOCAL.clear()
    if env is not None and "LOCAL_RANK" in env and "LOCAL_WORLD_SIZE" in env:
        _LOCAL.update(rank=env["LOCAL_RANK"], size=env["LOCAL_WORLD_SIZE"])
    else:  # ranks on one host = ranks that report the same host name, in rank order
        names = [None] * _dist.get_world_size()
        _dist.all_gather_object(names, socket.gethostname())
        mine = [r for r, n in enumerate(names) if n == names[_dist.get_rank()]]
        _LOCAL.update(rank=mine.index(_dist.get_rank()), size=len(mine))


def _require_init(what):
    if not _dist.is_initialized():
        raise RuntimeError(f"smdistributed.dataparallel: {what}() before init_process_group()")


def is_initialized():
    return _dist.is_initialized()


def get_world_size(group=None):
    _require_init("get_world_size")
    return _dist.get_world_size(group)


def get_rank(group=None):
    _require_init("get_rank")
    return _dist.get_rank(group)


def get_local_rank():
    """This process's index among the job's processes on its host (0 … get_local_size()-1)."""
    _require_init("get_local_rank")
    return _LOCAL["rank"]


def get_local_size():
    """The number of the job's processes on this host."""
    _require_init("get_local_size")
    return _LOCAL["size"]


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op=False):
    _require_init("all_reduce")
    return _dist.all_reduce(tensor, op=ReduceOp.SUM if op is None else op, group=group,
                            async_op=async_op)


def broadcast(tensor, src=0, group=None, async_op=False):
    _require_init("broadcast")
    return _dist.broadcast(tensor, src, group=group, async_op=async_op)


def all_gather(tensor_list, tensor, group=None, async_op=False):
    _require_init("all_gather")
    return _dist.all_gather(tensor_list, tensor, group=group, async_op=async_op)


def all_to_all_single(output_t, input_t, output_split_sizes=None, input_split_sizes=None,
                      group=None, async_op=False):
    _require_init("all_to_all_single")
    return _dist.all_to_all_single(output_t, input_t, output_split_sizes, input_split_sizes,
                                   group=group, async_op=async_op)


def barrier(group=None, async_op=False):
    _require_init("barrier")
    return _dist.barrier(group=group, async_op=async_op)


def destroy_process_group(group=None):
    if group is None:
        _LOCAL.clear()
    return _dist.destroy_process_group(group)


# torch.distributed's other calls (reduce_scatter, send/recv, new_group, ...) under their
# torch names, so code written against either API finds them here too.
reduce_scatter = _dist.reduce_scatter
reduce = _dist.reduce
gather = _dist.gather
scatter = _dist.scatter
send = _dist.send
recv = _dist.recv
isend = _dist.isend
irecv = _dist.irecv
new_group = _dist.new_group
get_backend = _dist.get_backend
all_gather_object = _dist.all_gather_object
broadcast_object_list = _dist.broadcast_object_list
