# SPDX-License-Identifier: Apache-2.0
"""The NCCL plane through torch, without a GPU: the fake device (SMDDP_DEVICE=fake, random stream
delays: a missing stream wait gives wrong data) and smddp's test NCCL (tests/nccl, loaded through
SMDDP_NCCL_LIBRARY), which moves the data between the processes as NCCL does and blocks a stream
until aborted when a peer is gone. Every tensor of a collective is mirrored into fake device
memory (test_fake_device.py), so the groups below run their collectives on NCCL:
- the plane each group reports (backend_of(group).data_plane): "nccl" for ranks on devices of
  their own, subgroups included; "smddp" for ranks sharing a device, under SMDDP_GPU_PLANE=smddp,
  and without the test NCCL (the fake device refuses any other);
- the collectives suite, every dtype and op (the pairs NCCL lacks, bitwise ops, complex, unsigned
  and float8 types, run on smddp's own plane with the same results), send/recv on NCCL's pair
  communicators, DDP trained exactly as over gloo, FSDP2 equal to gloo;
- a peer that is SIGKILLed, exits or is stopped inside a stream of all_reduces is named on every
  survivor within 2 s (PG timeout 60 s); ranks that disagree on a collective (size, dtype, kind)
  are named on every rank, at the latest at its next call (the signatures travel out of band);
- shrink_group without a loss shrinks the NCCL communicator (ncclCommShrink); after a lost rank,
  and after reconfigure, the survivors go on training on the plane; so does
  examples/keep_training.py.
"""
import os
import re
import subprocess
import sys

import pytest
import torch

import harness
import workers_collectives
import workers_ddp
import workers_dtypes
import workers_fsdp
import workers_nccl_plane
import workers_reconfigure
import workers_shrink

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.path.join(REPO, os.environ.get("BUILD_DIR", "build"))
TEST_NCCL = os.path.join(BUILD, "tests", "libsmddp_test_nccl.so")
# The plane is built wherever the CUDA toolkit's nccl.h is; there the test NCCL must exist.
_HAVE_NCCL_H = any(os.path.exists(os.path.join(d, "nccl.h"))
                   for d in ("/usr/local/cuda/include", os.path.join(os.environ.get("NCCL_HOME", "/x"), "include")))
pytestmark = pytest.mark.skipif(not _HAVE_NCCL_H and not os.path.exists(TEST_NCCL),
                                reason="no nccl.h at build time: this build has no NCCL plane")


@pytest.fixture(autouse=True)
def nccl_plane(monkeypatch):
    assert os.path.exists(TEST_NCCL), f"{TEST_NCCL} is missing: build the engine's tests first"
    monkeypatch.setenv("SMDDP_DEVICE", "fake")
    monkeypatch.setenv("SMDDP_FAKE_DEVICE_DELAY_US", "50")
    monkeypatch.setenv("SMDDP_NCCL_LIBRARY", TEST_NCCL)
    # Forced, so that every suite below runs on NCCL or fails saying why (the choice itself is
    # tested with auto).
    monkeypatch.setenv("SMDDP_GPU_PLANE", "nccl")


@pytest.mark.parametrize("env,want,needle", [
    ({}, "nccl", "every rank holds a device of its own and NCCL 2.30.7"),
    ({"SMDDP_FAKE_DEVICE_UUID": "fake-shared"}, "smddp", "share device fake-shared"),
    ({"SMDDP_GPU_PLANE": "smddp"}, "smddp", "SMDDP_GPU_PLANE=smddp"),
    ({"SMDDP_NCCL_LIBRARY": ""}, "smddp", "runs only smddp's test NCCL"),
], ids=["own-devices", "shared-device", "forced-smddp", "torch-nccl-on-fake"])
def test_the_plane_of_a_group_and_why(env, want, needle, monkeypatch):
    monkeypatch.setenv("SMDDP_GPU_PLANE", "auto")
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    harness.run(workers_nccl_plane.planes, 3, init="tcp", timeout=120, args=(want, needle))


@pytest.mark.parametrize("world,init", [(1, "file"), (3, "tcp")])
def test_collectives_on_the_nccl_plane(world, init):
    harness.run(workers_collectives.suite, world, init=init, timeout=240)


def test_every_dtype_and_op_on_the_nccl_plane(tmp_path):
    """NCCL's pairs on NCCL, the others (bitwise, complex, unsigned, float8) on smddp's plane."""
    harness.run(workers_dtypes.every_dtype, 3, timeout=240, args=(str(tmp_path),))


def test_send_and_recv_on_the_nccl_plane():
    harness.run(workers_nccl_plane.messages, 3, init="file", timeout=120)


def test_ddp_on_the_nccl_plane_matches_gloo():
    harness.run(workers_ddp.suite, 2, init="tcp", timeout=240)


def test_fsdp2_on_the_nccl_plane():
    harness.run(workers_fsdp.suite, 2, init="tcp", timeout=240)


@pytest.mark.parametrize("how", ["kill", "exit", "stop"])
def test_a_lost_peer_is_named_within_two_seconds(how):
    world, victim = 3, 1
    with pytest.raises(AssertionError) as failure:
        harness.run(workers_nccl_plane.lost_peer, world, init="file", timeout=90,
                    args=(victim, how, 20))
    report = str(failure.value)
    # the only failure the harness may report is the victim, gone (or killed at the end)
    assert f"ranks [{victim}] of {world} did not finish" in report, report
    assert "failed:" not in report, report


@pytest.mark.parametrize("kind", ["size", "dtype", "collective"])
def test_a_mismatch_is_named_on_every_rank(kind):
    harness.run(workers_nccl_plane.mismatch, 2, init="file", timeout=60, args=(kind,))


@pytest.mark.skipif(not hasattr(torch.distributed, "shrink_group"), reason="no shrink_group")
def test_shrink_without_a_loss_shrinks_the_nccl_communicator():
    harness.run(workers_nccl_plane.shrink_without_loss, 3, init="tcp", timeout=120)


@pytest.mark.skipif(not hasattr(torch.distributed, "shrink_group"), reason="no shrink_group")
def test_shrink_after_a_lost_rank_goes_on_on_the_plane():
    with pytest.raises(AssertionError) as failure:
        harness.run(workers_shrink.shrink_after_loss, 3, init="tcp", timeout=120,
                    args=(2, False))
    report = str(failure.value)
    assert "ranks [2] of 3 did not finish" in report, report
    assert "failed:" not in report, report


@pytest.mark.skipif(not hasattr(torch.distributed, "_reconfigure"), reason="needs torch >= 2.15")
def test_reconfigure_on_the_plane():
    harness.run(workers_reconfigure.api, 4, init="tcp", timeout=180)


def test_the_keep_training_example_on_the_plane():
    """examples/keep_training.py (a worker SIGKILLed, the group reconfigured around it, a
    replacement admitted), its gradients on the NCCL plane."""
    example = os.path.join(REPO, "examples", "keep_training.py")
    run = subprocess.run([sys.executable, example, "--steps", "30", "--step-s", "0.1"],
                         capture_output=True, text=True, timeout=180, env=dict(os.environ))
    assert run.returncode == 0, run.stdout + run.stderr
    done = re.findall(r"worker (\d+): done at step 30, parameters ([0-9a-f]+)", run.stdout)
    assert sorted(int(w) for w, _ in done) == [0, 1, 3, 4], run.stdout
    assert len({digest for _, digest in done}) == 1, run.stdout
    assert "rank 2" in run.stdout and "failed" in run.stdout, run.stdout
