# SPDX-License-Identifier: Apache-2.0
"""Builds torch_smddp._C with CMake (python/CMakeLists.txt), against the torch that the building
interpreter imports, compiling the engine from this repository.

    pip install --no-build-isolation .        # offline; torch must already be installed

Invariant: the interpreter that runs setup.py is the one CMake builds for (Python3_EXECUTABLE),
so the module's ABI tag and torch match what will import it. Env: SMDDP_BUILD_JOBS (default 2),
SMDDP_BUILD_TYPE (default Release), CMAKE_ARGS (extra -D options).

Versions: the engine's (CMakeLists.txt's project VERSION) for the sdist; a wheel adds the torch
it was built for as a local label (0.5.0+torch2.15.0.cu132), because its extension only loads
with that torch.
"""
import os
import re
import shlex
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = os.path.dirname(os.path.abspath(__file__))


def engine_version():
    with open(os.path.join(ROOT, "CMakeLists.txt")) as f:
        match = re.search(r"project\(smddp VERSION ([0-9.]+)", f.read())
    if not match:
        raise RuntimeError("CMakeLists.txt: no 'project(smddp VERSION x.y.z' line")
    return match.group(1)


def package_version():
    base = engine_version()
    if "sdist" in sys.argv[1:]:
        return base
    import torch

    return f"{base}+torch{re.sub(r'[^0-9a-zA-Z.]', '.', torch.__version__)}"


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        target = os.path.abspath(self.get_ext_fullpath(ext.name))
        # One CMake tree per (interpreter, torch): two venvs of one Python version must not share
        # a cache that names the other's torch, nor an output: setuptools' build_lib path is the
        # same for both, so _C is linked in the tree and copied from there every time (linked
        # into build_lib directly, a newer copy from the other venv looked up to date and was
        # installed instead).
        import hashlib

        import torch

        key = hashlib.sha1(f"{sys.executable}|{torch.__version__}".encode()).hexdigest()[:10]
        build_dir = os.path.abspath(os.path.join(self.build_temp, f"cmake-{key}"))
        os.makedirs(build_dir, exist_ok=True)
        args = [
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DSMDDP_PY_OUTPUT_DIR={os.path.join(build_dir, 'out')}",
            f"-DCMAKE_BUILD_TYPE={os.environ.get('SMDDP_BUILD_TYPE', 'Release')}",
        ] + shlex.split(os.environ.get("CMAKE_ARGS", ""))
        jobs = os.environ.get("SMDDP_BUILD_JOBS", "2")
        subprocess.check_call(["cmake", "-S", os.path.join(ROOT, "python"), "-B", build_dir] + args)
        subprocess.check_call(["cmake", "--build", build_dir, "--target", "_C", "-j", jobs])
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(build_dir, "out", os.path.basename(target)), target)


setup(
    version=package_version(),
    ext_modules=[CMakeExtension("torch_smddp._C")],
    cmdclass={"build_ext": CMakeBuild},
    # not build/: that is the engine's own CMake build directory by convention
    options={"build": {"build_base": "build-pip"}},
)
