#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Compile-only check of the torch c10d shim (python/csrc/*.cc) against torch 2.x C++ headers.
#
# No torch 2.x binaries exist offline here, so this proves only that the shim COMPILES against
# a torch 2.x header set (g++ -fsyntax-only, no object, no link, nothing is run). It downloads
# nothing. The argument is one of:
#   * an exported pytorch SOURCE tree (e.g. `git -C <pytorch.git> archive v2.11.0 | tar -x -C DIR`;
#     needs c10 aten torch torchgen tools version.txt). The headers a torch install has but the
#     source tree lacks are generated into a temp dir:
#       - *.h.in under c10/ torch/ aten/src/ATen/ caffe2/ (version.h, cmake_macros.h, Config.h,
#         ...) via CMake configure_file; version from version.txt, unset @VARS@ -> 0;
#       - ATen/{Functions,NativeFunctions,...}.h, ATen/core/TensorBody.h, ATen/ops/*.h via
#         `python3 -m torchgen.gen --generate headers --per-operator-headers`;
#       - torch/csrc/autograd/generated/*.h via `python3 -m tools.autograd.gen_autograd`.
#     pybind11 comes from third_party/pybind11 when that submodule is present, else from the
#     system (Debian's /usr/include/pybind11). Needs python3-yaml and python3-typing-extensions.
#   * an INSTALLED torch include tree: a libtorch dir, its include/, or site-packages/torch/include
#     (has ATen/ops already; torch's own bundled pybind11 is used). Nothing is generated.
# Also fails if any torch header resolves to the system's torch 1.x headers (/usr/include/{ATen,
# c10,torch,caffe2}), which would otherwise silently mask a missing 2.x header.
#
# usage: scripts/torch2_compile_check.sh <pytorch-source-or-include-tree>
#   env: PYTHON (default /usr/bin/python3), CXX (default g++), CXXSTD (default c++17, what
#        torch 2.x requires), KEEP=1 keeps the temp dir, EXTRA_CXXFLAGS.
set -euo pipefail

TREE=${1:?usage: $0 <pytorch-source-tree | torch-include-tree>}
TREE=$(cd "$TREE" && pwd)
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-/usr/bin/python3}
CXX=${CXX:-g++}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/torch2check.XXXXXX")
if [ "${KEEP:-0}" = 1 ]; then echo "temp dir kept: $WORK"; else trap 'rm -rf "$WORK"' EXIT; fi
GEN=$WORK/gen
INCS=()

if [ -d "$TREE/include/ATen/ops" ]; then TREE=$TREE/include; fi
if [ -d "$TREE/ATen/ops" ]; then
  echo "== installed torch include tree: $TREE"
  INCS=(-isystem "$TREE" -isystem "$TREE/torch/csrc/api/include")
elif [ -f "$TREE/aten/src/ATen/native/native_functions.yaml" ]; then
  echo "== pytorch source tree: $TREE (version.txt: $(cat "$TREE/version.txt"))"
  IFS=. read -r MAJ MIN PAT < <(sed -E 's/^([0-9]+)\.([0-9]+)\.([0-9]+).*/\1.\2.\3/' \
    "$TREE/version.txt")
  [ "$MAJ" -ge 2 ] || { echo "not a torch 2.x tree (version $MAJ.$MIN.$PAT)"; exit 2; }
  mkdir -p "$GEN/ATen" "$GEN/torch/csrc/autograd/generated"
  # 1. configured headers (*.h.in) -> $GEN, laid out as installed.
  cat > "$WORK/configure.cmake" <<'EOF'
file(READ "${IN}" text)
string(REGEX MATCHALL "@[A-Za-z0-9_]+@" used "${text}")
foreach(v IN LISTS used)
  string(REPLACE "@" "" v "${v}")
  if(NOT DEFINED ${v})
    set(${v} 0)
  endif()
endforeach()
configure_file("${IN}" "${OUT}")
EOF
  cd "$TREE"
  find c10 torch aten/src/ATen caffe2 -name '*.h.in' -not -path '*/third_party/*' 2>/dev/null |
    while read -r in; do
      out=${in%.in}
      out=${out#aten/src/}
      cmake -DIN="$TREE/$in" -DOUT="$GEN/$out" -DTORCH_VERSION_MAJOR="$MAJ" \
        -DTORCH_VERSION_MINOR="$MIN" -DTORCH_VERSION_PATCH="$PAT" -DTORCH_VERSION_ABI_TAG=0 \
        -DC10_BUILD_SHARED_LIBS=ON -DAT_PARALLEL_OPENMP=1 -DCAFFE2_USE_LITE_PROTO=OFF \
        -P "$WORK/configure.cmake"
      echo "   configured $out"
    done
  # 2. ATen operator headers (torchgen).
  echo "   torchgen: ATen headers"
  "$PY" -m torchgen.gen --source-path aten/src/ATen --install_dir "$GEN/ATen" \
    --per-operator-headers --generate headers > "$WORK/torchgen.log" 2>&1 ||
    { tail -20 "$WORK/torchgen.log"; echo "torchgen failed"; exit 1; }
  # 3. autograd headers (variable_factories.h, Functions.h, VariableType.h, ViewFuncs.h).
  echo "   gen_autograd: torch/csrc/autograd/generated"
  "$PY" -m tools.autograd.gen_autograd aten/src/ATen/native/native_functions.yaml \
    aten/src/ATen/native/tags.yaml "$GEN/torch/csrc/autograd/generated" tools/autograd \
    > "$WORK/gen_autograd.log" 2>&1 ||
    { tail -20 "$WORK/gen_autograd.log"; echo "gen_autograd failed"; exit 1; }
  cd "$ROOT"
  INCS=(-isystem "$GEN" -isystem "$GEN/torch/csrc/api/include" -isystem "$TREE"
        -isystem "$TREE/aten/src" -isystem "$TREE/torch/csrc/api/include")
  if [ -f "$TREE/third_party/pybind11/include/pybind11/pybind11.h" ]; then
    INCS+=(-isystem "$TREE/third_party/pybind11/include")
  fi
else
  echo "$TREE is neither a pytorch source tree nor a torch include tree"; exit 2
fi

PYINC=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
# The flags the extension build uses (python/CMakeLists.txt + torch's interface definitions).
FLAGS=(-std="${CXXSTD:-c++17}" -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_DISTRIBUTED -DUSE_C10D_GLOO
       -DUSE_RPC -DUSE_TENSORPIPE -Wall -Wextra -Wno-unused-parameter
       -I"$ROOT/python/csrc" -I"$ROOT/include" -I"$ROOT/src" "${INCS[@]}" -isystem "$PYINC")
# shellcheck disable=SC2206
FLAGS+=(${EXTRA_CXXFLAGS:-})

ver=$(printf '#include <torch/version.h>\nTORCH_VERSION\n' |
      "$CXX" "${FLAGS[@]}" -E -P -x c++ - 2>/dev/null | tail -1)
echo "== torch headers report TORCH_VERSION $ver"
case $ver in \"2.*) ;; *) echo "torch/version.h is not 2.x"; exit 1 ;; esac
PYB=$("$CXX" "${FLAGS[@]}" -M "$ROOT/python/csrc/module.cc" | tr ' ' '\n' |
      grep -m1 'pybind11/detail/common.h' || true)
echo "== pybind11: ${PYB%/detail/common.h} ($(grep -hE 'define PYBIND11_VERSION_(MAJOR|MINOR|PATCH) ' \
  "$PYB" | awk '{print $3}' | paste -sd.))"
echo "== compile: $CXX ${FLAGS[*]} -fsyntax-only <file>"

fail=0
for src in "$ROOT"/python/csrc/*.cc; do
  name=${src#"$ROOT"/}
  if ! "$CXX" "${FLAGS[@]}" -fsyntax-only "$src" 2> "$WORK/err.txt"; then
    echo "FAIL $name"; head -60 "$WORK/err.txt"; fail=1; continue
  fi
  [ -s "$WORK/err.txt" ] && cat "$WORK/err.txt"
  leaks=$("$CXX" "${FLAGS[@]}" -M "$src" | tr ' ' '\n' |
          grep -E '^/usr/(local/)?include/(ATen|c10|torch|caffe2)/' || true)
  if [ -n "$leaks" ]; then
    echo "FAIL $name: headers resolved to the system torch, not 2.x:"; echo "$leaks" | head
    fail=1; continue
  fi
  echo "ok   $name"
done
[ $fail -eq 0 ] && echo "== all python/csrc/*.cc compile against torch $ver" ||
  echo "== some files do not compile against torch $ver"
exit $fail
