# SPDX-License-Identifier: Apache-2.0
"""The BYOC image, end to end: docker/Dockerfile built with podman on a local stand-in for the
training image (tests/deploy/image.sh: Debian 12 + Debian's torch 1.13), then checked inside:
the SMDDP import paths, a 2-rank all_reduce through torch.distributed, the perf tool's sweep, and
deploy/k8s/perf-pod.yaml played as a pod.

    python3 -m pytest -q tests/deploy            # as root; scripts/podman_setup.sh is run first

Invariants: every subprocess has a timeout and a failure shows the tail of its output; every
container and pod this test starts is removed, pass or fail (the image is kept: the next run
reuses its layers). Skips only when not root or podman is missing.
"""
import os
import re
import shutil
import subprocess
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# SMDDP_TEST_IMAGE: check an image built elsewhere (on a real DLC, say) instead of building one.
PREBUILT = os.environ.get("SMDDP_TEST_IMAGE")
IMAGE = PREBUILT or "localhost/smddp-byoc:test"
LABEL = "smddp-deploy-test"
POD_YAML = os.path.join(ROOT, "deploy", "k8s", "perf-pod.yaml")
PERF = ["all_reduce_perf", "-b", "8", "-e", "1M", "-f", "4", "-np", "2"]

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (rootful podman, debootstrap)"),
    pytest.mark.skipif(shutil.which("podman") is None, reason="podman is not installed"),
]


def tail(text, lines=40):
    return "\n".join(text.rstrip().splitlines()[-lines:])


def sh(cmd, timeout, check=True, **kw):
    """Runs cmd (a list), stdout and stderr together; fails the test with the output's tail."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           timeout=timeout, cwd=kw.pop("cwd", ROOT), **kw)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else e.stdout or ""
        pytest.fail(f"Timed out after {timeout}s: {' '.join(cmd)}\n{tail(out)}", pytrace=False)
    if check and p.returncode != 0:
        pytest.fail(f"exit {p.returncode}: {' '.join(cmd)}\n{tail(p.stdout)}", pytrace=False)
    return p


def remove_containers():
    ids = sh(["podman", "ps", "-aq", "--filter", f"label={LABEL}"], 60, check=False).stdout.split()
    if ids:
        sh(["podman", "rm", "-f", "-t", "0"] + ids, 120, check=False)


@pytest.fixture(scope="module")
def image():
    sh(["bash", "scripts/podman_setup.sh"], 600)
    if PREBUILT:
        sh(["podman", "image", "exists", PREBUILT], 60)
    else:
        start = time.monotonic()
        # The build's output is long: a failure shows its tail, a success where the time went.
        out = sh(["bash", "tests/deploy/image.sh", "build", IMAGE], 2400).stdout
        for line in out.splitlines():
            if line.startswith(("image.sh [", "  Hits:", "  Misses:")):
                print(line)
        print(f"image {IMAGE} ready in {time.monotonic() - start:.0f}s")
    yield IMAGE
    remove_containers()


def run_in(image, args, timeout, volumes=(), check=True):
    """podman run with a name and a label, so a timed-out run is still removed. No network but
    loopback; /dev/shm above the 64 MiB default, as libfabric's shm provider keeps queues there."""
    name = f"smddp-test-{uuid.uuid4().hex[:8]}"
    cmd = ["podman", "run", "--rm", "--name", name, "--label", LABEL, "--network=none",
           "--shm-size=512m"]
    for v in volumes:
        cmd += ["--volume", v]
    try:
        return sh(cmd + [image] + list(args), timeout, check=check)
    finally:
        sh(["podman", "rm", "-f", "-t", "0", "--ignore", name], 60, check=False)


def perf_rows(output):
    """The table rows of a *_perf run: (size, out-of-place #wrong, in-place #wrong)."""
    rows = []
    for line in output.splitlines():
        fields = line.split()
        if not fields or line.lstrip().startswith("#") or not fields[0].isdigit():
            continue
        assert len(fields) == 13, f"unexpected perf row: {line!r}"
        rows.append((int(fields[0]), fields[8], fields[12]))
    return rows


def check_perf_output(output):
    rows = perf_rows(output)
    sizes = [r[0] for r in rows]
    assert sizes == [8 * 4**k for k in range(9)], f"sizes {sizes}\n{tail(output)}"
    bad = [r for r in rows if r[1] != "0" or r[2] != "0"]
    assert not bad, f"#wrong not 0 on {bad}\n{tail(output)}"


def test_import_torch_smddp(image):
    p = run_in(image, ["python3", "-c", "import torch, torch_smddp; print(torch.__version__)"], 120)
    assert p.stdout.strip(), "no output from the import check"


def test_import_smdistributed(image):
    # SageMaker's spelling: training scripts written for SMDDP import this and nothing else.
    run_in(image, ["python3", "-c", "import smdistributed.dataparallel.torch.torch_smddp"], 120)


ALL_REDUCE = """
import torch, torch.distributed as dist, torch_smddp
dist.init_process_group("smddp")
rank, world = dist.get_rank(), dist.get_world_size()
n = 1 << 16
t = torch.arange(n, dtype=torch.float32) + rank
dist.all_reduce(t)
# sum over ranks of (i + r) = world * i + world * (world - 1) / 2, exact in float32 below 2**24
expected = world * torch.arange(n, dtype=torch.float32) + world * (world - 1) / 2
assert torch.equal(t, expected), (rank, (t - expected).abs().max().item())
print(f"rank {rank}/{world}: all_reduce OK", flush=True)
dist.destroy_process_group()
"""


def test_torch_all_reduce(image, tmp_path):
    (tmp_path / "all_reduce.py").write_text(ALL_REDUCE)
    # torch 1.13's elastic agent on Python 3.11 needs its output redirected (redirects/tee).
    p = run_in(image, ["python3", "-m", "torch.distributed.run", "--standalone",
                       "--nproc_per_node", "2", "--redirects", "1", "--tee", "1",
                       "/job/all_reduce.py"], 300, volumes=[f"{tmp_path}:/job:ro"])
    for rank in range(2):
        assert f"rank {rank}/2: all_reduce OK" in p.stdout, tail(p.stdout)


def test_all_reduce_perf(image):
    p = run_in(image, PERF, 300)
    check_perf_output(p.stdout)


def kube_down(yaml_path):
    # `play kube --down` on podman 4.x; newer ones also spell it `kube down`.
    if sh(["podman", "play", "kube", "--down", yaml_path], 120, check=False).returncode != 0:
        sh(["podman", "kube", "down", yaml_path], 120, check=False)


def test_perf_pod(image, tmp_path):
    manifest = open(POD_YAML).read()
    assert re.search(r"^\s+image: \S+$", manifest, re.M), "no image line in perf-pod.yaml"
    pod_yaml = tmp_path / "perf-pod.yaml"
    pod_yaml.write_text(re.sub(r"^(\s+image: )\S+$", rf"\g<1>{image}", manifest, flags=re.M))
    pod = re.search(r"^  name: (\S+)$", manifest, re.M).group(1)
    container = re.search(r"^    - name: (\S+)$", manifest, re.M).group(1)
    name = f"{pod}-{container}"  # how podman names a pod's container
    kube_down(str(pod_yaml))  # a pod left by an interrupted run would make play fail
    try:
        sh(["podman", "play", "kube", str(pod_yaml)], 300)
        rc = sh(["podman", "wait", name], 300).stdout.strip().splitlines()[-1]
        logs = sh(["podman", "logs", name], 60).stdout
        assert rc == "0", f"{name} exited with {rc}\n{tail(logs)}"
        check_perf_output(logs)
    finally:
        kube_down(str(pod_yaml))
