#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The fuzz tier (docs/TESTING.md): builds the libFuzzer targets of tests/fuzz with clang under
# ASan+UBSan in $FUZZ_DIR, runs each for FUZZ_SECONDS over a copy of its committed seed corpus
# (tests/fuzz/corpus/<name>/ never grows here), then the Python targets (tests/fuzz/*_fuzz.py)
# under atheris in a venv of $FUZZ_DIR (pip: tests/fuzz/requirements.txt), and fails when any
# target crashes, hangs on one input for more than 5 s or goes over 1 GB, printing the input.
#   bash scripts/fuzz.sh [NAME...]   every target (tests/fuzz/CMakeLists.txt, *_fuzz.py), or
#                                    the named ones
#   bash scripts/fuzz.sh --planted   the self-check: the beacon target with a planted
#                                    out-of-bounds write must be caught within
#                                    FUZZ_PLANTED_SECONDS; succeeds only when it is
# Environment: FUZZ_SECONDS (20 per target), FUZZ_PLANTED_SECONDS (60), FUZZ_DIR (build-fuzz),
# JOBS (build jobs, default: number of cores).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
FUZZ_DIR=${FUZZ_DIR:-build-fuzz}
FUZZ_SECONDS=${FUZZ_SECONDS:-20}
FUZZ_PLANTED_SECONDS=${FUZZ_PLANTED_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

step() { printf '== [%2d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*"; }

# configure + build the given targets (clang, no CUDA, no tests or perf tools: only what the
# fuzz targets link is compiled).
build() {
  local launcher=()
  if command -v ccache >/dev/null; then
    export CCACHE_BASEDIR=$ROOT CCACHE_NOHASHDIR=1
    launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  step "configuring $FUZZ_DIR (clang, ASan+UBSan) and building: $*"
  CC=clang CXX=clang++ cmake -S . -B "$FUZZ_DIR" -DSMDDP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DSMDDP_BUILD_TESTS=OFF -DSMDDP_BUILD_BENCH=OFF -DSMDDP_WITH_CUDA=OFF -DSMDDP_WITH_NCCL=OFF \
    "${launcher[@]}" >/dev/null
  local targets=()
  for t in "$@"; do targets+=(--target "$t"); done
  cmake --build "$FUZZ_DIR" -j "$JOBS" "${targets[@]}"
}

# fuzz NAME CORPUS SECONDS COMMAND...: runs the fuzzer COMMAND over a fresh copy of
# tests/fuzz/corpus/CORPUS; its status is the fuzzer's (0: nothing found). The log and any
# crashing input stay in $FUZZ_DIR/run/NAME/.
fuzz() {
  local name=$1 corpus=$2 seconds=$3
  shift 3
  local work=$FUZZ_DIR/run/$name
  rm -rf "$work"
  mkdir -p "$work/corpus"
  cp tests/fuzz/corpus/"$corpus"/* "$work/corpus/"
  "$@" -max_total_time="$seconds" -timeout=5 -rss_limit_mb=1024 -artifact_prefix="$work/" \
    -print_final_stats=1 "$work/corpus" > "$work/log" 2>&1
}

# The Python targets' interpreter: a venv in $FUZZ_DIR with atheris (tests/fuzz/requirements.txt).
python_setup() {
  local py=$FUZZ_DIR/venv/bin/python
  if ! "$py" -c "import atheris" 2>/dev/null; then
    step "$FUZZ_DIR/venv: atheris for the Python targets"
    python3 -m venv "$FUZZ_DIR/venv"
    "$py" -m pip install -q --progress-bar off -r tests/fuzz/requirements.txt
  fi
}

# CMD: the command that fuzzes NAME, tests/fuzz/NAME_fuzz.py under atheris or the libFuzzer build.
CMD=()
set_command() {
  if [ -f "tests/fuzz/${1}_fuzz.py" ]; then
    CMD=("$FUZZ_DIR/venv/bin/python" "tests/fuzz/${1}_fuzz.py")
  else
    CMD=("$FUZZ_DIR/fuzz/${1}_fuzz")
  fi
}

# Where a failed run left its reproducer, and the sanitizer's report.
report() {
  local name=$1 work=$FUZZ_DIR/run/$1
  grep -E "ERROR: |SUMMARY: |runtime error|Uncaught Python|^[A-Za-z_.]*(Error|Exception)\b|Test unit written|^Base64:" \
    "$work/log" | head -20 || true
  set_command "$name"
  echo "full log: $work/log; reproduce: ${CMD[*]} $work/<crash file>"
}

run_targets() {
  local names=("$@") failed=() native=() python=()
  if [ ${#names[@]} -eq 0 ]; then
    mapfile -t python < <(cd tests/fuzz && ls -- *_fuzz.py | sed 's/_fuzz\.py$//')
    build smddp_fuzz_all
    mapfile -t native < "$FUZZ_DIR/fuzz/fuzz_targets.txt"
    names=("${native[@]}" "${python[@]}")
  else
    for name in "${names[@]}"; do
      if [ -f "tests/fuzz/${name}_fuzz.py" ]; then python+=("$name"); else native+=("${name}_fuzz"); fi
    done
    [ ${#native[@]} -eq 0 ] || build "${native[@]}"
  fi
  [ ${#python[@]} -eq 0 ] || python_setup
  for name in "${names[@]}"; do
    [ -d "tests/fuzz/corpus/$name" ] || { echo "no seed corpus tests/fuzz/corpus/$name" >&2; exit 2; }
    step "fuzzing $name for ${FUZZ_SECONDS} s"
    set_command "$name"
    if fuzz "$name" "$name" "$FUZZ_SECONDS" "${CMD[@]}"; then
      grep -E "^Done [0-9]+ runs" "$FUZZ_DIR/run/$name/log" | tr '\n' ' ' || true
      grep -E "^stat::new_units_added" "$FUZZ_DIR/run/$name/log" || echo
    else
      echo "FAILED: $name"
      report "$name"
      failed+=("$name")
    fi
  done
  if [ ${#failed[@]} -gt 0 ]; then
    step "fuzz targets that found a bug: ${failed[*]}"
    exit 1
  fi
  step "fuzz targets ok: ${names[*]}"
}

# The self-check: a fuzzer that cannot find a planted bug proves nothing by finding none.
run_planted() {
  build beacon_planted_fuzz
  step "self-check: the planted bug must be found within ${FUZZ_PLANTED_SECONDS} s"
  local start=$SECONDS
  if fuzz beacon_planted beacon "$FUZZ_PLANTED_SECONDS" "$FUZZ_DIR/fuzz/beacon_planted_fuzz"; then
    echo "FAILED: the planted bug was not found in ${FUZZ_PLANTED_SECONDS} s" >&2
    exit 1
  fi
  local log=$FUZZ_DIR/run/beacon_planted/log
  if ! grep -q "ERROR: AddressSanitizer: stack-buffer-overflow" "$log" ||
     ! grep -q "plantedCopy" "$log"; then
    echo "FAILED: the planted run failed, but not on the planted bug:" >&2
    report beacon_planted
    exit 1
  fi
  grep -E "SUMMARY: |Test unit written|^stat::number_of_executed_units" "$log"
  step "planted bug found in $((SECONDS - start)) s: the fuzz tier can find what it is for"
}

case "${1:-}" in
  --planted) run_planted ;;
  -h|--help) sed -n '3,14p' "$0" ;;
  *) run_targets "$@" ;;
esac
