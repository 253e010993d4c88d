# SPDX-License-Identifier: Apache-2.0
"""The hang doctor's export (python -m torch_smddp.doctor DIR --torch-trace OUT): smddp's
flight-recorder dumps, as parsed by doctor.py, rewritten as the per-rank trace files of torch's
flight recorder, so that torch's analyzer reads them as it reads NCCL's:

    python -m torch.distributed.flight_recorder.fr_trace OUT --prefix smddp_trace_rank_

The files, as that analyzer (torch.distributed.flight_recorder) reads them: one pickle per rank,
named <prefix><rank> (it takes the rank from the name), holding a dict with
  version    "2.10", the recorder format of torch 2.10 and later, as a "major.minor" string
  pg_config  {group name: {"name", "desc", "ranks": "[0, 1, 2]"}}: smddp dumps one group, the
             default one, named "0" and described "default_pg" as torch names it
  pg_status  {"0": the last enqueued, started and completed sequence numbers, -1 for none}
  entries    one dict per collective, oldest first: record_id and collective_seq_id are smddp's
             sequence number (the "#3" of the dump and of the doctor), profiling_name is
             "nccl:<op>" (the analyzer matches the op after the colon; "nccl" is the library name
             every version of it accepts), sizes one tensor of the call's count (all_gather's
             output and reduce_scatter's input hold every rank's block), dtypes as torch spells
             them ("Float", "BFloat16"), state scheduled / started / completed (a failed
             collective is "started": it never completed, as a hung NCCL one shows), times in ns
             since the communicator was created (the dump's offsets), frames empty.
A rank that wrote no dump has no file: the analyzer then needs --allow-incomplete-ranks.
Invariant: standard library only, and nothing imported from the package (doctor.py, run as a
file without torch, imports this one); it reads the doctor's Dump objects and writes nothing else.
"""
import os
import pickle
import re

VERSION = "2.10"
PREFIX = "smddp_trace_rank_"
GROUP, DESC = "0", "default_pg"

_CALL = re.compile(r"(\w+)\((?:(\w+), (\d+|per-rank counts))?")
_TIMEOUT = re.compile(r"timed out after (\d+) ms")
# smddp's kind -> torch's op name; send, recv and control entries name no peer: left out.
_OPS = {"all_reduce": "all_reduce", "broadcast": "broadcast", "all_gather": "all_gather",
        "barrier": "barrier", "reduce_scatter": "reduce_scatter", "reduce": "reduce",
        "gather": "gather", "scatter": "scatter", "all_to_all": "all_to_all",
        "all_to_allv": "all_to_all"}
_DTYPES = {"float32": "Float", "float64": "Double", "float16": "Half", "bfloat16": "BFloat16",
           "int8": "Char", "uint8": "Byte", "int16": "Short", "int32": "Int", "int64": "Long",
           "uint16": "UInt16", "uint32": "UInt32", "uint64": "UInt64", "bool": "Bool",
           "float8_e4m3fn": "Float8_e4m3fn", "float8_e4m3fnuz": "Float8_e4m3fnuz",
           "float8_e5m2": "Float8_e5m2", "float8_e5m2fnuz": "Float8_e5m2fnuz",
           "float8_e8m0fnu": "Float8_e8m0fnu", "complex64": "ComplexFloat",
           "complex128": "ComplexDouble"}
_STATES = {"queued": "scheduled", "running": "started", "failed": "started", "done": "completed"}


def _sizes(op, count, world):
    """(input_sizes, output_sizes): one tensor each; the gathered side holds world blocks."""
    if count is None:  # all_to_allv: its per-rank counts are not in the dump
        return [[0]], [[0]]
    block, whole = [count], [count * world]
    if op in ("all_gather", "gather"):
        return [block], [whole]
    if op in ("reduce_scatter", "scatter"):
        return [whole], [block]
    if op == "all_to_all":
        return [whole], [whole]
    return [block], [block]


def _ns(ms):
    return None if ms is None else int(round(ms * 1e6))


def entry(e, world, timeout_ms):
    """One dump entry as torch's recorder writes one; None for what torch cannot represent."""
    m = _CALL.match(e.call)
    op = _OPS.get(m[1]) if m else None
    if op is None or e.state not in _STATES:
        return None
    dtype = _DTYPES.get(m[2], m[2]) if m[2] else None
    count = int(m[3]) if m[3] and m[3].isdigit() else None
    inputs, outputs = _sizes(op, count, world) if dtype else ([], [])
    posted = e.posted_ms or 0.0
    started = posted + e.started_ms if e.started_ms is not None else None
    completed = started + (e.ran_ms or 0.0) if e.state == "done" and started is not None else None
    out = {"record_id": e.seq, "pg_id": 0, "process_group": (GROUP, DESC),
           "collective_seq_id": e.seq, "p2p_seq_id": 0, "op_id": e.seq,
           "profiling_name": f"nccl:{op}", "time_created_ns": _ns(posted),
           "input_sizes": inputs, "input_dtypes": [dtype] * len(inputs),
           "output_sizes": outputs, "output_dtypes": [dtype] * len(outputs),
           "state": _STATES[e.state], "time_discovered_started_ns": _ns(started),
           "time_discovered_completed_ns": _ns(completed), "retired": e.state == "done",
           "timeout_ms": timeout_ms, "is_p2p": False, "frames": []}
    if e.state == "done" and e.ran_ms is not None:
        out["duration_ms"] = e.ran_ms
    return out


def to_torch(dumps):
    """{rank: the dict torch's flight recorder dumps for that rank} of doctor.load's dumps."""
    out = {}
    for rank, d in sorted(dumps.items()):
        t = _TIMEOUT.search(d.error)
        timeout_ms = int(t[1]) if t else 0
        entries = [x for x in (entry(e, d.world, timeout_ms) for e in d.entries) if x]
        last = {"last_enqueued_collective": -1, "last_started_collective": -1,
                "last_completed_collective": -1}
        for x in entries:
            last["last_enqueued_collective"] = x["collective_seq_id"]
            if x["state"] != "scheduled":
                last["last_started_collective"] = x["collective_seq_id"]
            if x["state"] == "completed":
                last["last_completed_collective"] = x["collective_seq_id"]
        ranks = str(list(range(d.world)))
        out[rank] = {"version": VERSION,
                     "pg_config": {GROUP: {"name": GROUP, "desc": DESC, "ranks": ranks}},
                     "pg_status": {GROUP: last}, "entries": entries}
    return out


def write(dumps, directory, prefix=PREFIX):
    """Writes directory/<prefix><rank> for every dump; returns the paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for rank, trace in to_torch(dumps).items():
        path = os.path.join(directory, f"{prefix}{rank}")
        with open(path, "wb") as f:
            pickle.dump(trace, f)
        paths.append(path)
    return paths
