# SPDX-License-Identifier: Apache-2.0
"""torchft (PyPI torchft-nightly) on smddp: two replica groups train with torchft's
fault-tolerant DDP over a native smddp group (init in the reconfigure regime, torchft's
lighthouse -- started here -- forms the quorums and drives reconfigure). Replica 1 is SIGKILLed
mid-training; a new process takes its place, heals from replica 0 and both finish with equal
parameters and optimizer state.
"""
import faulthandler
import multiprocessing as mp
import os
import time
import traceback

import pytest
import torch
import torch.distributed as dist

import harness

torchft = pytest.importorskip("torchft", reason="torchft is not installed")
pytestmark = pytest.mark.skipif(not hasattr(dist.ProcessGroup, "reconfigure"),
                                reason="reconfigure needs torch >= 2.15")

STEPS, DIE_AT, LIMIT_S = 12, 4, 150


def _replica(args, err_path):
    faulthandler.dump_traceback_later(LIMIT_S - 10, exit=True)
    try:
        import workers_torchft

        workers_torchft.replica(*args)
    except BaseException:
        with open(err_path, "w") as f:
            f.write(traceback.format_exc())
        os._exit(1)


def test_replica_killed_and_replaced(tmp_path):
    from torchft._torchft import LighthouseServer

    lighthouse = LighthouseServer(bind="[::]:0", min_replicas=2)
    native = dist.TCPStore("localhost", harness.free_port(), is_master=True,
                           wait_for_workers=False)
    ctx = mp.get_context("spawn")
    outs = [str(tmp_path / f"replica{r}.pt") for r in range(2)]

    def start(replica_id, die_at, attempt):
        args = (replica_id, 2, lighthouse.address(), native.port, STEPS, die_at,
                outs[replica_id])
        p = ctx.Process(target=_replica, args=(args, str(tmp_path / f"{replica_id}.{attempt}.err")))
        p.start()
        return p

    procs = [start(0, -1, 0), start(1, DIE_AT, 0)]
    deadline = time.monotonic() + LIMIT_S
    try:
        procs[1].join(max(0, deadline - time.monotonic()))
        assert procs[1].exitcode == -9, f"replica 1 should have been SIGKILLed: {procs[1].exitcode}"
        procs.append(start(1, -1, 1))  # its replacement
        for p in (procs[0], procs[2]):
            p.join(max(0, deadline - time.monotonic()))
        errors = [open(tmp_path / n).read() for n in sorted(os.listdir(tmp_path))
                  if n.endswith(".err")]
        assert not errors, "\n".join(errors)
        assert procs[0].exitcode == 0 and procs[2].exitcode == 0, [p.exitcode for p in procs]
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
            p.join(5)
        lighthouse.shutdown()
    final = [torch.load(o, weights_only=False) for o in outs]
    torch.testing.assert_close(final[0]["state"], final[1]["state"])
    assert final[0]["participants"] == final[1]["participants"] == 2, final
