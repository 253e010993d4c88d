# SPDX-License-Identifier: Apache-2.0
"""PyTorch's own distributed test suite (torch.testing._internal.distributed.distributed_test,
DistributedTest._DistTestBase) run against a backend: smddp as a third-party ("plugin") backend,
or gloo for the side-by-side counts.

    python tests/upstream/torch_suite.py --backend smddp --world 2 [--filter SUBSTR] \
        [--json OUT.json] [--timeout-s 300]

Each test spawns WORLD processes (the suite's own MultiProcessTestCase); this file is their main
module too, so the backend is registered and the suite's feature tables name it in every process.
smddp is declared a "plugin" backend with the "ddp" feature (DDP on CPU tensors). The "gpu", "cuda"
and "subgroup" features are claimed only where no GPU is visible: the suite's own device-count
checks then skip every test that needs one GPU per rank, and those features gate only tests on CPU
tensors (all_gather_object among them); smddp takes CPU tensors only.
Invariant: every test is bounded (the suite's own per-test timeout, set by --timeout-s); the JSON
lists each test's outcome and, for failures, the first line of the error.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time
import unittest


def _configure():
    """Parses the arguments (main process only) into the environment the suite reads."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="smddp", choices=["smddp", "gloo"])
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--filter", action="append", default=[],
                    help="run only tests whose name contains this (repeatable)")
    ap.add_argument("--json", help="write per-test outcomes here")
    ap.add_argument("--timeout-s", type=int, default=300, help="bound of one test")
    args = ap.parse_args()
    os.environ["BACKEND"] = args.backend
    os.environ["WORLD_SIZE"] = str(args.world)
    os.environ.setdefault("TEMP_DIR", tempfile.mkdtemp(prefix="smddp_upstream_"))
    os.environ["SMDDP_UPSTREAM_TIMEOUT_S"] = str(args.timeout_s)
    return args


ARGS = _configure() if __name__ == "__main__" else None

import torch  # noqa: E402
import torch_smddp  # noqa: E402,F401  (registers "smddp" in this process and every spawned rank)
from torch.testing._internal import common_distributed  # noqa: E402
from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

DistTestCases.backend_feature["plugin"].add("smddp")
DistTestCases.backend_feature["ddp"].add("smddp")
if torch.cuda.device_count() == 0:
    for _feature in ("gpu", "cuda", "subgroup"):
        DistTestCases.backend_feature[_feature].add("smddp")

from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    DistributedTest,
    TestDistBackend,
)

# Tests the suite gates on a literal backend name although they need only what smddp has: run
# against smddp too (the suite's skip flag cleared; its other checks stay). The JSON lists them.
UNGATED = {
    # gated on {"gloo"}: all_reduce_coalesced on CPU tensors
    **{f"test_all_reduce_coalesced_{g}{op}": "all_reduce_coalesced"
       for g in ("", "full_group_") for op in ("sum", "product", "min", "max")},
    # gated on "mpi, nccl and gloo": Work.get_future (the test_accumulate_gradients_no_sync* tests
    # under the same gate build their model only for those backends by name, so they stay gated)
    "test_get_future": "Work.get_future",
    # gated on {"gloo"}: batch_isend_irecv, scatter_object_list, gather, monitored_barrier
    "test_batch_isend_irecv_gloo": "batch_isend_irecv",
    "test_batch_isend_irecv_gloo_tags": "batch_isend_irecv with tags",
    "test_scatter_object_list": "scatter_object_list",
    "test_grads_same_across_ranks_with_no_sync": "gather of gradients",
    "test_monitored_barrier_gloo": "monitored_barrier",
    "test_monitored_barrier_gloo_subgroup": "monitored_barrier on a subgroup",
    "test_monitored_barrier_gloo_rank_0_timeout": "monitored_barrier timing out",
    # gated on "Only gloo backend supports timeouts": a barrier's timeout error ("Timed out")
    "test_barrier_timeout_global": "barrier timing out",
    "test_barrier_timeout_group": "barrier timing out on a subgroup",
    "test_barrier_timeout_full_group": "barrier timing out on the full group",
    # gated on "Only Gloo backend supports sparse all reduce"
    "test_sparse_all_reduce_sum": "sparse all_reduce",
}
if os.environ.get("BACKEND") == "smddp":
    for _name in UNGATED:
        getattr(DistributedTest._DistTestBase, _name).__unittest_skip__ = False

common_distributed.TIMEOUT_DEFAULT = int(os.environ.get("SMDDP_UPSTREAM_TIMEOUT_S", "300"))


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        self._spawn_processes()


class Recorder(unittest.TextTestResult):
    """Keeps every test's outcome, duration and first error line for the JSON summary."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.outcomes = {}
        self._start = 0.0

    def startTest(self, test):
        self._start = time.monotonic()
        super().startTest(test)

    def _put(self, test, outcome, detail=""):
        name = test.id().rsplit(".", 1)[-1]
        self.outcomes[name] = {"outcome": outcome, "seconds": round(time.monotonic() - self._start, 1),
                               "detail": detail}

    def addSuccess(self, test):
        super().addSuccess(test)
        self._put(test, "pass")

    def addSkip(self, test, reason):
        super().addSkip(test, reason)
        self._put(test, "skip", str(reason)[:300])

    def addFailure(self, test, err):
        super().addFailure(test, err)
        self._put(test, "fail", _first_line(err))

    def addError(self, test, err):
        super().addError(test, err)
        self._put(test, "error", _first_line(err))

    def addExpectedFailure(self, test, err):
        super().addExpectedFailure(test, err)
        self._put(test, "pass", "expected failure")

    def addUnexpectedSuccess(self, test):
        super().addUnexpectedSuccess(test)
        self._put(test, "fail", "unexpected success")


ERROR_LINE = re.compile(r"\b(\w+(?:Error|Exception)): (.+)")


def _first_line(err):
    """What went wrong, in one line: the suite wraps a rank's failure in "Process N exited with
    error code 10 and exception:" plus its traceback; the last "XxxError: ..." line that is not
    that wrapper or the suite's repro hint says it."""
    exc = err[1]
    found = None
    for line in str(exc).splitlines():
        m = ERROR_LINE.search(line)
        if m and "PYTORCH_PRINT_REPRO_ON_FAILURE" not in line and "exited with error code" not in line:
            found = f"{m.group(1)}: {m.group(2).strip()}"
    return (found or f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}")[:400]


def main(args):
    loader = unittest.TestLoader()
    suite = loader.loadTestsFromTestCase(TestDistBackendWithSpawn)
    if args.filter:
        keep = unittest.TestSuite()
        for t in suite:
            if any(f in t.id() for f in args.filter):
                keep.addTest(t)
        suite = keep
    runner = unittest.TextTestRunner(verbosity=2, resultclass=Recorder)
    started = time.monotonic()
    result = runner.run(suite)
    counts = {}
    for o in result.outcomes.values():
        counts[o["outcome"]] = counts.get(o["outcome"], 0) + 1
    summary = {"backend": args.backend, "world": args.world, "torch": torch.__version__,
               "seconds": round(time.monotonic() - started), "counts": counts,
               "tests": result.outcomes,
               "ungated": sorted(UNGATED) if args.backend == "smddp" else []}
    print(json.dumps({k: summary[k] for k in ("backend", "world", "torch", "seconds", "counts")}))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(summary, f, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(ARGS))
