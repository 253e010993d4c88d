# SPDX-License-Identifier: Apache-2.0
"""Registration of the "smddp" torch.distributed backend.

Invariant: registration happens at most once per interpreter (importing twice, reloading the
package or calling register() again is a no-op), because torch asserts on a second
register_backend of the same name. Groups still alive when the interpreter exits are shut down
from an atexit hook, while Python still runs: their completion threads finish the last
collectives' Works, whose tensors need the interpreter, before it is torn down.
"""
import atexit
import inspect
from datetime import timedelta

import torch
import torch.distributed as dist

from . import _C

BACKEND_NAME = "smddp"
_DEVICES = ["cpu", "cuda"]


def _timeout_seconds(timeout):
    if isinstance(timeout, timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _communicator_name(group_id):
    # torch already prefixes store keys per group; the engine prefixes them again with this name
    # so two communicators can never read each other's bootstrap keys.
    return BACKEND_NAME if not group_id else f"{BACKEND_NAME}.{group_id}"


# Every ProcessGroupSmddp, from create_backend or built by hand, is tracked by the native part.
atexit.register(_C._shutdown_live_groups)


def create_backend(dist_backend_opts, pg_options=None):
    """Creator torch calls (extended API) for every group that uses backend "smddp".
    With init_process_group(..., enable_reconfigure=True) (torch >= 2.15) the group starts
    without a communicator; dist._reconfigure forms one (README: "Keep training through
    failures")."""
    opts = dist_backend_opts
    return _C.ProcessGroupSmddp(
        opts.store,
        opts.group_rank,
        opts.group_size,
        _timeout_seconds(opts.timeout),
        _communicator_name(getattr(opts, "group_id", "")),
        reconfigure=bool(getattr(opts, "enable_reconfigure", False)),
    )


def backend_of(group=None):
    """The ProcessGroupSmddp behind `group` (default: the world group), for its smddp-specific
    properties (provider, communicator_name, timeout_seconds, spin_us). torch 2.x groups
    dispatch to a backend per device; torch 1.13's group is the backend itself."""
    pg = group if group is not None else dist.distributed_c10d._get_default_group()
    if isinstance(pg, _C.ProcessGroupSmddp):
        return pg
    backend = pg._get_backend(torch.device("cpu"))
    if not isinstance(backend, _C.ProcessGroupSmddp):
        raise ValueError(f"the group's CPU backend is {type(backend).__name__}, not smddp")
    return backend


def is_registered():
    backend = dist.Backend
    return BACKEND_NAME.upper() in getattr(backend, "_plugins", {}) or hasattr(
        backend, BACKEND_NAME.upper()
    )


def register():
    """Registers the backend; returns False when it was already registered."""
    if is_registered():
        return False
    kwargs = {"extended_api": True}
    # torch >= 2.0 routes tensors to a backend by device; without devices= CPU tensors may not
    # reach us. torch 1.x has no such parameter.
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        kwargs["devices"] = list(_DEVICES)
    dist.Backend.register_backend(BACKEND_NAME, create_backend, **kwargs)
    _record_itself()
    return True


def _record_itself():
    """smddp records its own collectives (its flight recorder: SMDDP_DUMP_ON_TIMEOUT, and the
    timeout messages), so torch >= 2.15 should not attach its FlightRecorderHook to smddp groups
    as it does to backends that do not: besides recording twice, that hook probes the current CUDA
    stream for each barrier, which on a machine without a GPU (torch's CUDA wheel) throws and
    catches an exception each time, ~50 us per barrier. Older torch has no such set."""
    c10d = getattr(dist, "distributed_c10d", None)
    self_recording = getattr(c10d, "_FR_SELF_RECORDING_BACKENDS", None)
    if isinstance(self_recording, set):
        self_recording.add(BACKEND_NAME)
