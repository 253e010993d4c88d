#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on the GPU machine from the repository root, with .deps/gpu/ from tests/gpu/gather_deps.sh
# beside the working tree (one call, about 6 minutes on 16 cores): unpacks its libfabric .debs into
# a private prefix, builds GoogleTest if missing, builds torch_smddp against the machine's torch in
# the background while it configures and builds the CUDA parts for the local GPU's architecture
# (SMDDP_CUDA_ARCHS, default 90), runs the NCCL plane's suite on the machine's real NCCL (the
# nvidia-nccl package torch loads; ranks sharing the GPU), the CUDA tests (unit + gpu labels), the
# collectives on CUDA memory across processes and reduce_cuda_bench, then
# tests/gpu/torch_cuda_check.py (CUDA tensors through torch: the NCCL plane against
# ProcessGroupNCCL first, then smddp's own plane), and writes everything to ${OUT:-./build-gpu-out}/.
# TORCH_ONLY=1 skips the CUDA build, tests and bench; FULL=1 adds the torch tier on CPU tensors
# (several minutes), TORCH_TESTS="test_a.py test_b.py" runs those Python tests.
# DRY_RUN=1: the CPU side only, on any machine (part of the README's test command; see below).
# Invariant: touches nothing outside the repository and $OUT; every step is time-bounded, and all
# of them together by BUDGET_S.
set -uo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
if [ -n "${DRY_RUN:-}" ]; then
  # The CPU side, on a machine without a GPU, from an existing build ($BUILD_DIR, default build)
  # and the project venv: the device layer's conformance tests (fake; the CUDA cases skip), the
  # collectives on fake device memory across processes, and torch_cuda_check.py --dry-run.
  build=${BUILD_DIR:-build}
  py=${PYTHON:-.venv/bin/python}
  set -e
  echo "== dry run: device tests on the fake device ($build)"
  (cd "$build" && ctest --output-on-failure --timeout 300 \
     -R '^(smddp_unit_device|smddp_unit_device_loading|smddp_loopback_core_device|smddp_loopback_core_device_ipc|smddp_mp_device|smddp_mp_nccl_plane)$')
  echo "== dry run: tests/gpu/torch_cuda_check.py on the fake device (the NCCL worlds on the test NCCL)"
  BUILD_DIR="$build" timeout 300 "$py" tests/gpu/torch_cuda_check.py --dry-run --out "${OUT:-$build/gpu-dry-run}"
  exit 0
fi
# One device command: every step's bound is cut to what is left of BUDGET_S (default 540 s), so the
# run ends, with the steps done so far reported, before the device tool's 10-minute limit.
t0=$(date +%s)
budget=${BUDGET_S:-540}
cap() {  # cap SECONDS: the bound for the next step
  local left=$(( t0 + budget - $(date +%s) ))
  (( left < $1 )) && { (( left > 1 )) && echo "$left" || echo 1; } || echo "$1"
}
out=${OUT:-$root/build-gpu-out}  # /build*/ is git-ignored
mkdir -p "$out"
log=$out/gpu-run.log
exec > >(tee "$log") 2>&1
deps=$root/.deps/gpu
prefix=$deps/prefix
arch=${SMDDP_CUDA_ARCHS:-90}
jobs=$(nproc)

echo "== machine"; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
nvcc --version | tail -1; cmake --version | head -1; uname -a

echo "== libfabric prefix"
mkdir -p "$prefix"
for d in "$deps"/debs/*.deb; do [ -e "$d" ] && dpkg -x "$d" "$prefix"; done
libdir=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH=$libdir:${LD_LIBRARY_PATH:-}
export PKG_CONFIG_PATH=$libdir/pkgconfig:${PKG_CONFIG_PATH:-}
ldd "$libdir/libfabric.so.1" | grep "not found" || echo "libfabric: all dependencies resolved"

# The NCCL that torch loads (the nvidia-nccl package): its header builds the NCCL plane, its
# library is the one the plane's suite runs on.
nccl_dir=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
nccl_lib=$(ls "$nccl_dir"/lib/libnccl.so* 2>/dev/null | head -1)
echo "== NCCL: ${nccl_lib:-none found (the NCCL plane is skipped)}"

gtest_args=()
if ! [ -f /usr/lib/x86_64-linux-gnu/cmake/GTest/GTestConfig.cmake ] &&
   ! [ -f /usr/local/lib/cmake/GTest/GTestConfig.cmake ]; then
  echo "== building GoogleTest"
  timeout $(cap 300) cmake -S "$deps/googletest" -B "$deps/gtest-build" -DCMAKE_INSTALL_PREFIX="$prefix/gtest" \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_POSITION_INDEPENDENT_CODE=ON >/dev/null &&
  timeout $(cap 300) cmake --build "$deps/gtest-build" -j"$jobs" --target install >/dev/null
  gtest_args=(-DGTest_DIR="$prefix/gtest/lib/cmake/GTest")
fi

# torch_smddp against this machine's torch, built in the background while the CUDA tests build
# and run (half the cores each), installed into a private target.
torch_prefix=$(python3 -c 'import torch;print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
site=$root/build-gpu/site
torch_build=""
if [ -n "$torch_prefix" ]; then
  echo "== torch_smddp against torch $(python3 -c 'import torch; print(torch.__version__)') (background)"
  rm -rf "$site"; mkdir -p "$site"  # pip --target keeps an existing package instead of replacing it
  ( CMAKE_ARGS="-DLibfabric_INCLUDE_DIR=$prefix/usr/include -DLibfabric_LIBRARY=$libdir/libfabric.so -DSMDDP_CUDA_ARCHS=$arch ${nccl_dir:+-DSMDDP_NCCL_INCLUDE_DIR=$nccl_dir/include}" \
      SMDDP_BUILD_JOBS=$(( (jobs + 1) / 2 )) timeout $(cap 480) python3 -m pip install -q --no-build-isolation \
      --no-deps --target "$site" . > "$out/torch-build.log" 2>&1
    echo $? > "$out/torch-build.rc" ) &
  torch_build=$!
fi

test_rc=0
bench_rc=0
if [ -z "${TORCH_ONLY:-}" ]; then
echo "== configure (archs $arch; torch prefix: ${torch_prefix:-none})"
timeout $(cap 300) cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DSMDDP_CUDA_ARCHS="$arch" \
  -DCMAKE_PREFIX_PATH="$prefix/usr;${torch_prefix}" \
  -DLibfabric_INCLUDE_DIR="$prefix/usr/include" -DLibfabric_LIBRARY="$libdir/libfabric.so" \
  ${nccl_dir:+-DSMDDP_NCCL_INCLUDE_DIR="$nccl_dir/include"} \
  "${gtest_args[@]}" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }

echo "== build"
targets=(reduce_cuda_plan_test reduce_cuda_api_test reduce_cuda_ops_test reduce_cuda_kernels_test
         reduce_cuda_bench reduce_kernels_test smddp_unit_device smddp_unit_device_loading
         smddp_mp_device smddp_mp_nccl_plane all_reduce_perf all_gather_perf)
timeout $(cap 480) cmake --build build-gpu -j$(( (jobs + 1) / 2 )) --target "${targets[@]}" \
  > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }

if [ -n "$nccl_lib" ] && [ -x build-gpu/tests/smddp_mp_nccl_plane ]; then
  echo "== the NCCL plane on real NCCL, ranks sharing the GPU (worlds 1 and 3, faults, estimates)"
  SMDDP_DEVICE=cuda SMDDP_GPU_PLANE=nccl SMDDP_NCCL_LIBRARY="$nccl_lib" NCCL_MULTI_RANK_GPU_ENABLE=1 \
    NCCL_MAX_CTAS=1 timeout $(cap 150) build-gpu/tests/smddp_mp_nccl_plane \
    --gtest_filter='Worlds/NcclPlaneWorlds.*/0:Worlds/NcclPlaneWorlds.*/1:NcclPlaneFaults.*:NcclPlaneEstimates.*' \
    2>&1 | tee "$out/nccl_plane.txt" | tail -25
  [ "${PIPESTATUS[0]}" = 0 ] || test_rc=1
  echo "== the perf tools on device buffers (-g 1), NCCL plane, 2 ranks"
  for tool in all_reduce all_gather; do
    SMDDP_DEVICE=cuda SMDDP_GPU_PLANE=nccl SMDDP_NCCL_LIBRARY="$nccl_lib" NCCL_MULTI_RANK_GPU_ENABLE=1 \
      NCCL_MAX_CTAS=1 timeout $(cap 60) build-gpu/bench/${tool}_perf -np 2 -g 1 -b 1M -e 256M -f 4 \
      -n 10 -w 2 | tee "$out/${tool}_perf_nccl.txt" || test_rc=1
  done
fi

echo "== tests"
(cd build-gpu && timeout $(cap 180) ctest --output-on-failure \
   -R '^(reduce_cuda_.*|reduce_kernels_test|smddp_unit_device|smddp_unit_device_loading)$')
test_rc=$?
echo "== collectives on CUDA memory across processes (SMDDP_DEVICE=cuda, ranks share the GPU)"
SMDDP_DEVICE=cuda SMDDP_STAGING_BYTES=64K timeout $(cap 150) build-gpu/tests/smddp_mp_device || test_rc=1
cp build-gpu/Testing/Temporary/LastTest.log "$out/" 2>/dev/null || true

echo "== bench (256 MiB buffers, 20 iterations)"
timeout $(cap 120) build-gpu/bench/reduce_cuda_bench 256 20 | tee "$out/reduce_cuda_bench.txt"
bench_rc=${PIPESTATUS[0]}
fi

torch_rc=0
if [ -n "$torch_build" ]; then
  wait "$torch_build"
  torch_rc=$(cat "$out/torch-build.rc" 2>/dev/null || echo 1)
  [ "$torch_rc" = 0 ] || tail -30 "$out/torch-build.log"
  if [ "$torch_rc" = 0 ] && ! readelf -d "$site"/torch_smddp/_C*.so | grep -q "libstdc++.so"; then
    echo "torch_smddp._C does not link the shared libstdc++ (a private copy crashes)"; torch_rc=1
  fi
  if [ "$torch_rc" = 0 ]; then
    echo "== CUDA tensors through torch: collectives, stream order, DDP vs gloo, busbw vs gloo/nccl"
    PYTHONPATH=$site timeout $(cap 420) python3 tests/gpu/torch_cuda_check.py --out "$out" --timeout $(cap 100) ||
      torch_rc=1
  fi
  # The torch tier on CPU tensors (several minutes): TORCH_TESTS="test_a.py ..." or FULL=1.
  tests=${TORCH_TESTS:-}
  [ -n "${FULL:-}" ] && [ -z "$tests" ] && tests="test_registration.py test_collectives.py
    test_ddp.py test_errors.py test_faults.py test_groups.py test_exit.py test_torch2.py
    test_crash.py test_p2p.py test_fsdp.py test_pipeline.py test_parallel.py"
  if [ "$torch_rc" = 0 ] && [ -n "$tests" ]; then
    (cd tests/python && PYTHONPATH=$site timeout $(cap 420) python3 -m pytest -q -p no:cacheprovider \
       -n 8 $tests 2>&1 | tee "$out/torch-tests.txt")
    [ "${PIPESTATUS[0]}" = 0 ] || torch_rc=1
  fi
fi
echo "== done in $(( $(date +%s) - t0 )) s: tests rc=$test_rc bench rc=$bench_rc torch rc=$torch_rc"
[ $test_rc -eq 0 ] && [ $bench_rc -eq 0 ] && [ "$torch_rc" = 0 ]
