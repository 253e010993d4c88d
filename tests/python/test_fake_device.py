# SPDX-License-Identifier: Apache-2.0
"""The CUDA path of torch_smddp and the engine, without a GPU: with SMDDP_DEVICE=fake every tensor
of a collective is mirrored into the fake device's memory (which the host cannot touch) and the
collective runs on it as on CUDA tensors — staged through pinned host memory, or on the devices
through CUDA IPC within the host (SMDDP_DEVICE_IPC=1), started after the
work queued on the rank's stream, the results waited for on that stream — with random delays on
every stream (SMDDP_FAKE_DEVICE_DELAY_US), so a missing stream wait gives wrong data. The checks
are the host tests' own: the collectives suite (closed-form results, every collective, dtype and
op, in place and strided, async and dropped Works), every dtype torch carries (test_dtypes.py), send/recv (ring exchanges, any source,
batches, objects), DDP trained exactly as over gloo, FSDP2 equal to gloo and the unsharded model,
a 1F1B pipeline equal to the unsplit model, tensor parallelism and compiled functional
collectives; and FSDP2 on 2 namespace hosts x 2 through CUDA IPC within each host, each rank's
share exchanged across hosts."""
import os

import pytest

import harness
import netns_hosts
import workers_collectives
import workers_ddp
import workers_dtypes
import workers_fsdp
import workers_p2p
import workers_parallel
import workers_pipeline


@pytest.fixture(autouse=True)
def fake_device(monkeypatch):
    monkeypatch.setenv("SMDDP_DEVICE", "fake")
    monkeypatch.setenv("SMDDP_FAKE_DEVICE_DELAY_US", "50")
    # small pipeline segments, so the 300,007-element collectives of the suite run multi-segment
    monkeypatch.setenv("SMDDP_STAGING_BYTES", "256K")


@pytest.mark.parametrize("world,init,ipc",
                         [(1, "file", "0"), (3, "tcp", "0"), (3, "file", "1")])
def test_collectives_on_the_fake_device(world, init, ipc, monkeypatch):
    monkeypatch.setenv("SMDDP_DEVICE_IPC", ipc)  # 1: through CUDA IPC in the host
    harness.run(workers_collectives.suite, world, init=init, timeout=240)


def test_every_dtype_and_op_on_the_fake_device(monkeypatch, tmp_path):
    """test_dtypes.py's checks, every tensor on the fake device (through CUDA IPC)."""
    monkeypatch.setenv("SMDDP_DEVICE_IPC", "1")
    harness.run(workers_dtypes.every_dtype, 3, timeout=240, args=(str(tmp_path),))


@pytest.mark.parametrize("ipc", ["0", "1"])
def test_ddp_on_the_fake_device_matches_gloo(ipc, monkeypatch):
    monkeypatch.setenv("SMDDP_DEVICE_IPC", ipc)
    harness.run(workers_ddp.suite, 2, init="tcp", timeout=240)


def test_send_and_recv_on_the_fake_device():
    harness.run(workers_p2p.suite, 3, init="file", timeout=240)


@pytest.mark.parametrize("ipc", ["0", "1"])
def test_fsdp2_on_the_fake_device(ipc, monkeypatch):
    """1: FSDP2's all_gather and reduce_scatter run through CUDA IPC (asserted by its counter)."""
    monkeypatch.setenv("SMDDP_DEVICE_IPC", ipc)
    harness.run(workers_fsdp.suite, 2, init="tcp", timeout=240)


def test_pipeline_on_the_fake_device():
    harness.run(workers_pipeline.suite, 4, init="file", timeout=180, args=("1f1b",))


def test_tensor_parallel_and_compiled_collectives_on_the_fake_device():
    harness.run(workers_parallel.tensor_parallel, 4, init="tcp", timeout=180)
    harness.run(workers_parallel.compiled_collectives, 2, init="file", timeout=240)


# FSDP2 (and HSDP 2 x 2) on 2 namespace hosts x 2 ranks with CUDA IPC: the default group's
# all_gather and reduce_scatter take the path across hosts (IPC within each host, each rank's
# share exchanged with its counterpart over tcp; counted by the suite), equal to gloo.
@pytest.mark.skipif(netns_hosts.skip_reason() is not None, reason=str(netns_hosts.skip_reason()))
def test_fsdp2_across_namespace_hosts_on_the_fake_device(monkeypatch):
    monkeypatch.setenv("SMDDP_DEVICE_IPC", "1")
    worker = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fsdp_worker_env.py")
    runs = netns_hosts.torchrun_on_hosts(f"fdh{os.getpid() % 10000}", [worker], 29541,
                                         env=dict(os.environ, SMDDP_DEBUG="INFO"), timeout=300)
    for code, out in runs:
        assert code == 0, out[-4000:]
    outs = [out for _, out in runs]
    text = "".join(outs)
    assert text.count("fsdp suite passed on rank") == 4, text[-4000:]
    assert "across hosts: each rank's share staged" in text, text[-4000:]
