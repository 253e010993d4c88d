# SPDX-License-Identifier: Apache-2.0
"""Packaging: `pip wheel .` makes a wheel named for the torch it was built against
(torch_smddp-<engine version>+torch<torch version>-<python tags>.whl) holding the extension,
torch_smddp, SMDDP's import paths and the entry points, and it installs and works; the sdist
carries what the build needs and nothing of a checkout's build trees, and the extension's CMake
project configures from it alone (every source it names is there). A full wheel build from the
sdist (minutes: nothing of the checkout's build is reusable from another tree) runs with
SMDDP_TEST_SDIST_BUILD=1.

Invariant: everything is built under tmp_path and installed with --target there, then imported
in a fresh interpreter that sees that copy first; the checkout's own install is untouched.
Bounded: every subprocess has a timeout.
"""
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile

import pytest
import torch

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LOCAL = "torch" + re.sub(r"[^0-9a-zA-Z.]", ".", torch.__version__)
TAG = f"cp{sys.version_info.major}{sys.version_info.minor}"


def engine_version():
    with open(os.path.join(REPO, "CMakeLists.txt")) as f:
        return re.search(r"project\(smddp VERSION ([0-9.]+)", f.read()).group(1)


def build_env(tree):
    env = dict(os.environ, SMDDP_BUILD_JOBS=str(os.cpu_count() or 2))
    if shutil.which("ccache"):
        env["CCACHE_BASEDIR"] = tree
        env["CMAKE_ARGS"] = ("-DCMAKE_C_COMPILER_LAUNCHER=ccache "
                             "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache")
    return env


def pip_wheel(tree, out):
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-build-isolation",
                        "--no-deps", "--no-index", "-w", str(out), "."], cwd=tree,
                       env=build_env(tree), capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = [f for f in os.listdir(out) if f.endswith(".whl")]
    assert len(wheels) == 1, wheels
    return os.path.join(out, wheels[0])


def check_installed(wheel, target):
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                        "--target", str(target), wheel], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    code = (
        "import os, sys, tempfile, torch, torch.distributed as dist\n"
        "import smdistributed.dataparallel.torch.torch_smddp, torch_smddp\n"
        f"assert torch_smddp.__file__.startswith({str(target)!r}), torch_smddp.__file__\n"
        "store = dist.FileStore(os.path.join(tempfile.mkdtemp(), 's'), 1)\n"
        "dist.init_process_group('smddp', store=store, rank=0, world_size=1)\n"
        "t = torch.arange(5.0); dist.all_reduce(t); assert t.tolist() == [0, 1, 2, 3, 4]\n"
        "dist.destroy_process_group(); print('ok', torch_smddp.__version__)\n")
    env = dict(os.environ, PYTHONPATH=str(target))
    r = subprocess.run([sys.executable, "-c", code], env=env, cwd=str(target),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("ok"), r.stdout + r.stderr[-3000:]


def check_wheel(wheel):
    name = os.path.basename(wheel)
    want = rf"torch_smddp-{re.escape(engine_version())}\+{re.escape(LOCAL)}-{TAG}-{TAG}-linux_\w+\.whl"
    assert re.fullmatch(want, name), (name, want)
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        entry_points = next(z.read(n).decode() for n in names if n.endswith("entry_points.txt"))
    assert any(re.fullmatch(r"torch_smddp/_C\..*\.so", n) for n in names), names
    for module in ("torch_smddp/launch.py", "torch_smddp/roles.py", "torch_smddp/doctor.py",
                   "smdistributed/dataparallel/torch/torch_smddp.py",
                   "smdistributed/dataparallel/torch/distributed.py",
                   "smdistributed/dataparallel/torch/parallel/distributed.py"):
        assert module in names, module
    assert "smddp-launch = torch_smddp.launch:main" in entry_points
    assert "[torch.distributed.backends]" in entry_points


def test_wheel_is_named_for_its_torch_and_works(tmp_path):
    wheel = pip_wheel(REPO, tmp_path / "dist")
    check_wheel(wheel)
    check_installed(wheel, tmp_path / "site")


def test_sdist_carries_the_sources_and_builds(tmp_path):
    r = subprocess.run([sys.executable, "-c", "import sys; from setuptools import build_meta; "
                        "print(build_meta.build_sdist(sys.argv[1]))", str(tmp_path)], cwd=REPO,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    sdist = tmp_path / r.stdout.strip().splitlines()[-1]
    assert sdist.name == f"torch_smddp-{engine_version()}.tar.gz"
    with tarfile.open(sdist) as tar:
        members = [m.split("/", 1)[1] for m in tar.getnames() if "/" in m]
        tar.extractall(tmp_path / "src", filter="data")
    for needed in ("CMakeLists.txt", "cmake/FindLibfabric.cmake", "python/CMakeLists.txt",
                   "python/csrc/process_group.cc", "src/CMakeLists.txt",
                   "include/smddp/communicator.h", "bench/CMakeLists.txt", "setup.py"):
        assert needed in members, needed
    stray = [m for m in members if re.match(r"(build|\.venv|tests/|\.git)", m)]
    assert not stray, stray
    tree = str(tmp_path / "src" / sdist.name[:-len(".tar.gz")])
    r = subprocess.run(["cmake", "-S", os.path.join(tree, "python"), "-B", str(tmp_path / "b"),
                        f"-DPython3_EXECUTABLE={sys.executable}", "-DCMAKE_BUILD_TYPE=Release"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    if os.environ.get("SMDDP_TEST_SDIST_BUILD") == "1":
        check_wheel(pip_wheel(tree, tmp_path / "dist"))
        check_installed(os.path.join(tmp_path / "dist", os.listdir(tmp_path / "dist")[0]),
                        tmp_path / "site")
