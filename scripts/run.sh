#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One entry point for a fresh Debian 12 machine (as root, or with sudo available):
#   bash scripts/run.sh main   installs what training needs, builds the library, the extension and
#                              the perf tool it runs, runs the main job (DDP training, a sweep)
#   bash scripts/run.sh test   installs what the tests need too, builds everything, runs every
#                              test tier (torch 2.x from PyPI, and the torch 1.13 legacy tier)
#   bash scripts/run.sh build  installs what the tests need and builds everything
#   bash scripts/run.sh upstream [world sizes, default "2 3"]
#                              installs what is missing, builds, runs PyTorch's own distributed
#                              test suite against smddp and gloo (tests/upstream, docs/UPSTREAM.md)
#   bash scripts/run.sh compare [bench/compare flags]
#                              installs what is missing, builds, runs bench/compare
#                              (smddp vs gloo vs Open MPI, docs/PERF.md)
# What each mode changes on the machine: Debian packages (MAIN_PACKAGES for main; every other mode
# TEST_PACKAGES too), .venv (python/requirements.txt for main, requirements-test.txt otherwise);
# test also podman's settings (scripts/podman_setup.sh) and .venv113.
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
PY=/usr/bin/python3   # Debian's interpreter: it sees python3-torch

# A step's heading, with the time since the script started (CI logs show where the time goes).
step() { printf '== [%2d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# Training: a compiler, CMake, libfabric, pybind11 (the extension), OpenSSL's libcrypto (the job
# secret), venv + pip, ccache.
MAIN_PACKAGES=(build-essential cmake pkg-config libfabric-dev libfabric-bin pybind11-dev
               libssl-dev python3-venv python3-pip ccache)
# The tests add GoogleTest, Google Benchmark, Debian's torch 1.13 (the legacy tier), Open MPI
# (bench/compare's peer), network namespaces and firewall rules, etcd (torchrun's rendezvous), the
# Kubernetes models (the manifests' validator), clang and libFuzzer (the fuzz tier).
TEST_PACKAGES=("${MAIN_PACKAGES[@]}" libgtest-dev libgmock-dev libbenchmark-dev python3-pytest
               python3-torch libtorch-dev openmpi-bin libopenmpi-dev python3-matplotlib iproute2
               iptables etcd-server etcd-client python3-etcd python3-kubernetes python3-yaml clang
               libclang-rt-14-dev)
PACKAGES=("${TEST_PACKAGES[@]}")
REQUIREMENTS=python/requirements-test.txt
# main: training's packages and PyPI requirements only, and only the targets it runs.
if [ "${1:-}" = main ]; then
  PACKAGES=("${MAIN_PACKAGES[@]}")
  REQUIREMENTS=python/requirements.txt
fi

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  step "installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# ccache: the two torch_smddp builds (.venv, .venv113) compile the same engine sources; paths
# relative to the checkout (CCACHE_BASEDIR) let the second reuse the first's objects.
LAUNCHER=()

# build [TARGET...]: the library and the given targets (the perf tool of the main job), without
# the C++ tests; with no target, everything the tests need.
build() {
  if command -v ccache >/dev/null; then  # after install_packages: a fresh machine has it now
    export CCACHE_BASEDIR=$ROOT
    LAUNCHER=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    export CMAKE_ARGS="${CMAKE_ARGS:-} ${LAUNCHER[*]}"
  fi
  local tests=ON targets=()
  if [ $# -gt 0 ]; then
    tests=OFF
    for t in "$@"; do targets+=(--target "$t"); done
  fi
  step "configuring and building in $BUILD_DIR${1:+ (${*})}"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSMDDP_BUILD_TESTS=$tests \
    "${LAUNCHER[@]}" >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS" "${targets[@]}"
}

check_rules() {
  step "checking the layering rules"
  bash scripts/check_rules.sh
}

# Two interpreters, each with torch_smddp built against its own torch:
#   .venv     torch 2.x from PyPI (python/requirements.txt pins it; requirements-test.txt adds the
#             tests' packages), made from the python3 on PATH,
#             which reaches PyPI: the torch users run; every Python test runs here.
#   .venv113  Debian's torch 1.13 (python3-torch, seen only by /usr/bin/python3): the legacy tier.
# The first torch download on a fresh machine is a few GB ($BUILD_DIR/pip.log).
# The packages of $REQUIREMENTS go into .venv in the background while the code builds
# (python_deps_start; the download is network-bound); setup_python waits for them.
PIP_PID=""
python_deps_start() {
  # a .venv that sees the system's packages (the layout before torch 2.x) is made anew
  if [ ! -x .venv/bin/python ] || grep -q "include-system-site-packages = true" .venv/pyvenv.cfg; then
    rm -rf .venv
    python3 -m venv .venv
  fi
  mkdir -p "$BUILD_DIR"
  step ".venv: torch and the other PyPI packages ($REQUIREMENTS) in the background ($BUILD_DIR/pip.log)"
  .venv/bin/python -m pip install --progress-bar off -r "$REQUIREMENTS" \
    > "$BUILD_DIR/pip.log" 2>&1 &
  PIP_PID=$!
}

python_deps_wait() {
  [ -n "$PIP_PID" ] || python_deps_start
  if ! wait "$PIP_PID"; then
    tail -30 "$BUILD_DIR/pip.log"
    echo "pip install -r $REQUIREMENTS failed (log: $BUILD_DIR/pip.log)" >&2
    exit 1
  fi
  PIP_PID=""
}

# Stops a background pip when the script ends early (a failed build).
stop_background() {
  [ -z "$PIP_PID" ] || kill "$PIP_PID" 2>/dev/null || true
}
trap stop_background EXIT

setup_python() {
  python_deps_wait
  step ".venv: torch_smddp against $(grep -m1 '^torch==' python/requirements.txt)"
  SMDDP_BUILD_JOBS=$JOBS .venv/bin/python -m pip install -q --no-build-isolation --no-deps .
  .venv/bin/python -c "import torch, torch_smddp; print('torch', torch.__version__, '+ torch_smddp', torch_smddp.__file__)"
}

setup_python113() {
  step ".venv113: Debian's torch 1.13 + torch_smddp (legacy tier)"
  [ -x .venv113/bin/python ] || "$PY" -m venv --system-site-packages .venv113
  SMDDP_BUILD_JOBS=$JOBS .venv113/bin/python -m pip install -q --no-index --no-build-isolation --no-deps .
  .venv113/bin/python -c "import torch, torch_smddp; print('torch', torch.__version__, '+ torch_smddp', torch_smddp.__file__)"
}

run_main() {
  step "main job: ResNet-style CNN, DistributedDataParallel over smddp, 4 ranks (torchrun)"
  .venv/bin/python -m torch.distributed.run --standalone --nproc_per_node=4 examples/train_ddp.py \
    --epochs 4
  step "engine perf tool: 4-rank all_reduce sweep over libfabric shm"
  "$BUILD_DIR/bench/all_reduce_perf" -b 8 -e 64M -f 4 -np 4 -P shm
}

# The legacy tier: what torch 1.13 offers (collectives, DDP, errors, exits, crashes); the tests
# of 2.x-only features skip themselves there, saying so. The crash-exit job runs 5 times there
# (10 on torch 2.x: the exit path is smddp's, not torch's).
LEGACY_TESTS=(test_registration.py test_collectives.py test_ddp.py test_errors.py test_faults.py
              test_groups.py test_exit.py test_crash.py)

run_tests() {
  check_rules
  step "checking the docs (paths, variables, quoted messages, examples' --help, the perf tools' flags)"
  .venv/bin/python scripts/check_docs.py --build-dir "$BUILD_DIR" --python .venv/bin/python
  step "C++ tests (ctest: unit, loopback, mp)"
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 600)
  step "fuzz tier: every decoder another process can feed, 20 s each, and the planted-bug check"
  # Two commands, not an && list: set -e ignores a failure on the left of &&.
  bash scripts/fuzz.sh
  bash scripts/fuzz.sh --planted
  step "the GPU validation script's CPU side (tests/gpu/run_gpu.sh, DRY_RUN=1: the fake device)"
  DRY_RUN=1 BUILD_DIR="$BUILD_DIR" OUT="$BUILD_DIR/gpu-dry-run" bash tests/gpu/run_gpu.sh
  # On min(JOBS, 4) pytest-xdist workers, a test file per worker at a time; then the tests that
  # measure rates or times (marked `alone`) with nothing beside them.
  local workers=$((JOBS < 4 ? JOBS : 4))
  step "Python tests, torch $(.venv/bin/python -c 'import torch; print(torch.__version__)') ($workers workers)"
  .venv/bin/python -m pytest -q -p no:cacheprovider --durations=10 -n "$workers" --dist loadfile \
    -m "not alone" tests/python
  step "Python tests that measure rates or times, one at a time"
  .venv/bin/python -m pytest -q -p no:cacheprovider -m alone tests/python
  step "Python tests, legacy tier: torch 1.13"
  (cd tests/python && SMDDP_CRASH_RUNS=5 ../../.venv113/bin/python -m pytest -q -p no:cacheprovider --durations=5 "${LEGACY_TESTS[@]}")
  # Debian's interpreter: python3-kubernetes is its package; the image test only drives podman.
  step "deployment: Kubernetes manifests (offline), the BYOC image built and checked (podman)"
  base_images_wait
  "$PY" -m pytest -q -p no:cacheprovider --durations=5 tests/deploy
  step "all tests passed"
}

run_upstream() {
  local out=build-upstream
  mkdir -p "$out"
  for world in ${*:-2 3}; do
    for backend in smddp gloo; do
      step "PyTorch's distributed suite: $backend, world $world (log: $out/${backend}_$world.log)"
      .venv/bin/python tests/upstream/torch_suite.py --backend "$backend" --world "$world" \
        --json "$out/${backend}_$world.json" > "$out/${backend}_$world.log" 2>&1 || true
      tail -1 "$out/${backend}_$world.log"
    done
  done
  .venv/bin/python tests/upstream/summarize.py "$out"/*.json
}

# The image test's base images (debootstrap + Debian's torch: minutes, mostly apt and dpkg) are
# made in the background while the code builds, never while tests run; the test makes them
# itself when this did not.
BASE_IMAGES_PID=""
base_images_start() {
  bash scripts/podman_setup.sh
  mkdir -p "$BUILD_DIR"
  step "making the image test's base images in the background ($BUILD_DIR/base-images.log)"
  nice bash tests/deploy/image.sh train-base > "$BUILD_DIR/base-images.log" 2>&1 &
  BASE_IMAGES_PID=$!
}

base_images_wait() {
  [ -n "$BASE_IMAGES_PID" ] || return 0
  wait "$BASE_IMAGES_PID" || echo "base images not made in the background (see $BUILD_DIR/base-images.log); the test makes them"
  BASE_IMAGES_PID=""
}

case "${1:-}" in
  main) install_packages; python_deps_start; build all_reduce_perf; setup_python; run_main ;;
  test) install_packages; base_images_start; python_deps_start; build; setup_python
        setup_python113; base_images_wait; run_tests ;;
  build) install_packages; python_deps_start; build; setup_python; setup_python113 ;;
  upstream)
    shift
    install_packages; python_deps_start; build; setup_python; run_upstream "$@" ;;
  compare)
    shift
    install_packages; python_deps_start; build; setup_python
    exec bench/compare --engine-dir "$BUILD_DIR/bench" "$@" ;;
  *) echo "usage: $0 main|test|build|upstream [worlds]|compare [bench/compare flags]" >&2; exit 2 ;;
esac
