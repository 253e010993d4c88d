#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (as root, or with sudo available):
#   bash scripts/run.sh main   installs what is missing, builds, runs the main job
#   bash scripts/run.sh test   installs what is missing, builds, runs every test tier
#   bash scripts/run.sh build  installs what is missing and builds only
# Environment: BUILD_DIR (default build), JOBS (default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
PY=/usr/bin/python3   # Debian's interpreter: it sees python3-torch

PACKAGES=(build-essential cmake pkg-config libfabric-dev libfabric-bin libgtest-dev libgmock-dev
          libbenchmark-dev pybind11-dev python3-pytest python3-torch libtorch-dev python3-venv
          python3-pip openmpi-bin libopenmpi-dev python3-matplotlib iproute2 iptables)

install_packages() {
  local missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

build() {
  echo "== configuring and building in $BUILD_DIR"
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$BUILD_DIR" -j "$JOBS"
}

check_rules() {
  echo "== checking the layering rules"
  bash scripts/check_rules.sh
}

run_main() {
  echo "== main job: 4-rank all_reduce sweep over libfabric shm"
  "$BUILD_DIR/bench/all_reduce_perf" -b 8 -e 64M -f 4 -np 4 -P shm
}

run_tests() {
  check_rules
  echo "== C++ tests (ctest: unit, loopback, mp)"
  (cd "$BUILD_DIR" && ctest --output-on-failure -j "$JOBS" --timeout 600)
}

case "${1:-}" in
  main) install_packages; build; run_main ;;
  test) install_packages; build; run_tests ;;
  build) install_packages; build ;;
  *) echo "usage: $0 main|test|build" >&2; exit 2 ;;
esac
