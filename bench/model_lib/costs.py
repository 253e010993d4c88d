# SPDX-License-Identifier: Apache-2.0
"""The library's cost model (src/model/costs.h), called through libsmddp_model.so (ctypes).

One model, not two: the algorithms' costs live in the library, which uses them for its time
estimates (torch's _time_estimator); bench/model calibrates and tabulates through the same
functions. A Machine holds what the costs need (src/model/machine.h says each field); every
function here converts it to the library's array of doubles and asks.

The library is found as $SMDDP_MODEL_LIB, else build*/src/libsmddp_model.so in the repository
(the build the README's commands make).
Invariant: no cost is computed in Python; sizes are nccl-tests' (the whole buffer for all_reduce,
one rank's whole send buffer for all_to_all: costs.h).
"""
import ctypes
import glob
import math
import os
from dataclasses import dataclass, fields, replace

from compare_lib.common import busbw_factor

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FLAT_RD_MAX_BYTES = 64 * 1024  # selector.cc: recursive doubling up to this size


@dataclass(frozen=True)
class Machine:
    name: str
    nodes: int
    per_node: int
    net_alpha: float
    net_rate: float
    net_eff: float = 1.0
    msg_alpha: float = 0.0
    arena_alpha: float = 2e-6
    copy_rate: float = 8e9
    gamma: float = 1.0 / 8e9
    slot_bytes: int = 1 << 20
    segment_bytes: int = 1 << 20
    link_burst: int = 0
    msg_share: float = 1.0
    cpu_share: float = 1.0
    call_alpha: float = 0.0
    gpu_alpha: float = 6e-6
    gpu_rate: float = 360e9

    @property
    def ranks(self):
        return self.nodes * self.per_node

    def net_beta(self):
        """Seconds per byte through one node's link (one direction)."""
        return 1.0 / (self.net_rate * self.net_eff)


_LIB = None


def library():
    """The loaded libsmddp_model.so (OSError naming where it looked when there is none)."""
    global _LIB
    if _LIB is not None:
        return _LIB
    given = os.environ.get("SMDDP_MODEL_LIB")
    cands = [given] if given else [os.path.join(REPO, "build", "src", "libsmddp_model.so")] + \
        sorted(glob.glob(os.path.join(REPO, "build*", "src", "libsmddp_model.so")))
    found = [c for c in cands if os.path.exists(c)]
    if not found:
        raise OSError("libsmddp_model.so not found (" + ", ".join(cands[:2]) + "): build the "
                      "library (README) or set SMDDP_MODEL_LIB")
    lib = ctypes.CDLL(found[0])
    d, sz, cp, dp = (ctypes.c_double, ctypes.c_size_t, ctypes.c_char_p,
                     ctypes.POINTER(ctypes.c_double))
    lib.smddp_model_fields.restype = cp
    lib.smddp_model_error.restype = cp
    lib.smddp_model_seconds.argtypes = [dp, sz, cp, cp, d, dp]
    lib.smddp_model_parts.argtypes = [dp, sz, cp, cp, d, dp]
    lib.smddp_model_selected.argtypes = [dp, sz, cp, d, ctypes.c_char_p, sz]
    lib.smddp_model_algorithms.argtypes = [cp, ctypes.c_char_p, sz]
    _LIB = lib
    return lib


def _array(m):
    lib = library()
    names = lib.smddp_model_fields().decode().split(",")
    values = [float(getattr(m, n)) for n in names]
    return (ctypes.c_double * len(values))(*values), len(values)


def _check(rc):
    if rc != 0:
        raise ValueError("cost model: " + library().smddp_model_error().decode())


def time(m, name, size, kind="all_reduce"):
    """Seconds per call of algorithm `name` on `size` bytes, calls back to back (costs.h); "nccl"
    is the NCCL plane's call."""
    arr, n = _array(m)
    out = ctypes.c_double()
    _check(library().smddp_model_seconds(arr, n, kind.encode(), name.encode(), float(size),
                                         ctypes.byref(out)))
    return out.value


def parts(m, name, size, kind="all_reduce"):
    """(latency seconds, wire bytes on the critical path, busiest link's bytes per direction)."""
    arr, n = _array(m)
    out = (ctypes.c_double * 3)()
    _check(library().smddp_model_parts(arr, n, kind.encode(), name.encode(), float(size), out))
    return out[0], out[1], out[2]


def selected(m, size, kind="all_reduce"):
    """What smddp's selector runs on this machine (the library's own selector)."""
    arr, n = _array(m)
    buf = ctypes.create_string_buffer(64)
    _check(library().smddp_model_selected(arr, n, kind.encode(), float(size), buf, 64))
    return buf.value.decode()


def applicable(m, kind="all_reduce"):
    """The costed algorithms that run on this shape: the arena's on one node of several ranks,
    the hierarchical ones across nodes of several ranks each, the flat ones across nodes."""
    buf = ctypes.create_string_buffer(1024)
    _check(library().smddp_model_algorithms(kind.encode(), buf, 1024))
    out = []
    for a in buf.value.decode().split(","):
        arena = a.startswith("arena") or a == "pooled"
        hier = a.startswith("hier")
        if arena and not (m.nodes == 1 and m.per_node > 1):
            continue
        if hier and not (m.nodes > 1 and m.per_node > 1):
            continue
        if not arena and not hier and m.nodes == 1 and m.per_node > 1:
            continue
        out.append(a)
    return out


def best(m, size, kind="all_reduce"):
    """(name, seconds) of the algorithm the model finds fastest."""
    return min(((a, time(m, a, size, kind)) for a in applicable(m, kind)), key=lambda x: x[1])


def busbw(m, size, seconds, kind="all_reduce"):
    """Bytes/s, nccl-tests' definition (compare_lib.common)."""
    return size / seconds * busbw_factor(kind, m.ranks) if seconds > 0 else 0.0


def scaled(m, **changes):
    return replace(m, **changes)


def field_names():
    return [f.name for f in fields(Machine)]


def cross_ring_min_bytes(h):
    """The selector's ring threshold for the cross all_reduce (crossRingMinBytes), read off the
    model: the largest part size whose hier_split step still takes recursive doubling."""
    m = Machine("probe", h, 2, net_alpha=1.0, net_rate=math.inf, arena_alpha=0.0,
                copy_rate=math.inf, gamma=0.0)
    lo, hi = 1, 64 << 20
    rd = time(m, "hier_split", 2 * lo)
    while lo + 1 < hi:  # steps change from rdSteps(h) to 2 (h - 1) at the threshold
        mid = (lo + hi) // 2
        if time(m, "hier_split", 2 * mid) == rd:
            lo = mid
        else:
            hi = mid
    return lo
