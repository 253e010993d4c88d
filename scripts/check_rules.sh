#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mechanical rules of CONTRIBUTING.md: includes point down the layers (the layering below, written
# once), libfabric headers only under src/transport/ofi, getenv only in the config parser, torch
# only under python/, CUDA headers only in the CUDA parts, nccl.h only in the NCCL plane, an SPDX license line at the top of every source file, no file over 500
# lines; the wings (the device planes, the arena, the transports) keep to their folders. Before
# checking the tree, the include and wing checks run on planted wrong includes and must catch each
# (a check that cannot fail is no check).
set -uo pipefail
cd "$(dirname "$0")/.."

# The layers of src/, bottom up: each may include the public API (smddp/), its own folder, and the
# layers named here. A folder of src/ not listed is an error, so a new layer must be placed.
declare -A MAY_INCLUDE=(
  [common]=""
  [store]="common"
  [reduce]="common"
  [device]="common reduce"
  [transport]="common store"
  [algorithms]="common store reduce transport"
  [model]="common reduce algorithms"
  [watch]="common store transport algorithms"
  [planes]="common store reduce device transport algorithms"
  [core]="common store reduce device transport algorithms model watch planes"
)

# Wings: folders inside a layer that keep to themselves. Others of src/ reach a wing only through
# its doors ("*": any of its headers), from the folders named (its own layer's parts included);
# the wing itself sees of its own layer only the generic parts named (a file or a folder/), never
# a sibling wing or the layer's other code. Tests may include anything of a wing.
declare -A WING_DOORS=(
  [planes/nccl]="nccl_plane.h"
  [planes/smddp]="path.h stager.h"
  [algorithms/arena]="*"
  [transport/ofi]="bootstrap.h"
  [transport/loopback]="loopback_transport.h"
)
declare -A WING_USERS=(
  [planes/nccl]="src/core"
  [planes/smddp]="src/core"
  [algorithms/arena]="src/algorithms src/core"
  [transport/ofi]="src/transport"
  [transport/loopback]="src/transport"
)
declare -A WING_SEES=(
  [planes/nccl]="planes/device_work.h"
  [planes/smddp]="planes/device_work.h"
  [algorithms/arena]="algorithms/collective.h algorithms/exec.h algorithms/exec_monitor.h algorithms/patterns/"
  [transport/ofi]="transport/transport.h transport/peer_liveness.h"
  [transport/loopback]="transport/transport.h"
)

# The wing a path of src/ is in ("" none).
wing_of() {
  local w
  for w in "${!WING_DOORS[@]}"; do
    case "$1" in "src/$w/"*|"$w/"*) echo "$w"; return ;; esac
  done
}

# Prints one line per include of a file (paths relative to the cwd) that breaks a wing's rules.
wing_violations() {
  local f inc home target file ok x
  for f in "$@"; do
    case "$f" in src/*) ;; *) continue ;; esac
    home=$(wing_of "$f")
    for inc in $(sed -nE 's/^\s*#\s*include\s*"([a-z_0-9]+\/[^"]*)".*/\1/p' "$f" | sort -u); do
      target=$(wing_of "$inc")
      if [ -n "$home" ] && [ "$target" != "$home" ] && [ "${inc%%/*}" = "${home%%/*}" ]; then
        ok=no
        for x in ${WING_SEES[$home]}; do
          case "$x" in
            */) case "$inc" in "$x"*) ok=yes ;; esac ;;
            *) [ "$inc" != "$x" ] || ok=yes ;;
          esac
        done
        [ $ok = yes ] || { echo "$f includes $inc: $home sees of its layer only: ${WING_SEES[$home]}"; continue; }
      fi
      [ -n "$target" ] && [ "$target" != "$home" ] || continue
      file=${inc#"$target"/}
      ok=no
      for x in ${WING_USERS[$target]}; do case "$f" in "$x"/*) ok=yes ;; esac; done
      [ $ok = yes ] || { echo "$f includes $inc: $target is reached only from ${WING_USERS[$target]:-tests}"; continue; }
      case " ${WING_DOORS[$target]} " in
        *" * "*|*" $file "*) ;;
        *) echo "$f includes $inc: $target is entered only through ${WING_DOORS[$target]}" ;;
      esac
    done
  done
}

# Prints one line per include of a file (paths relative to the cwd) that goes the wrong way.
# include/ and python/ see only the public API.
include_violations() {
  local f layer allowed inc layer_names
  layer_names="smddp|$(IFS='|'; echo "${!MAY_INCLUDE[*]}")"
  for f in "$@"; do
    case "$f" in
      src/*/*) layer=${f#src/}; layer=${layer%%/*}
               if [ -z "${MAY_INCLUDE[$layer]+set}" ]; then
                 echo "$f: src/$layer/ is not a layer of scripts/check_rules.sh"; continue
               fi
               allowed=" smddp $layer ${MAY_INCLUDE[$layer]} " ;;
      src/*) echo "$f: a source file belongs in a layer's folder"; continue ;;
      include/*|python/*) layer=${f%%/*}; allowed=" smddp " ;;
      *) continue ;;
    esac
    # "layer/x.h", and <layer/x.h> for a layer's name (src/ is an include root); a relative ../
    # include hides the layer, so it is refused.
    if grep -qE '^\s*#\s*include\s*[<"]\.\./' "$f"; then
      echo "$f: relative ../ include (name the layer: \"layer/file.h\")"
    fi
    for inc in $( (sed -nE 's/^\s*#\s*include\s*"([a-z_0-9]+)\/.*/\1/p' "$f"
                   sed -nE 's/^\s*#\s*include\s*<([a-z_0-9]+)\/.*/\1/p' "$f" |
                     grep -xE "$layer_names") | sort -u); do
      case "$allowed" in
        *" $inc "*) ;;
        *) echo "$f includes $inc/: $layer may include only:$allowed" ;;
      esac
    done
  done
}

self_test() {
  local dir out
  dir=$(mktemp -d)
  mkdir -p "$dir/src/transport"
  printf '#include "core/engine.h"\n#include "store/prefix_store.h"\n' > "$dir/src/transport/a.cc"
  printf '#include <watch/signature.h>\n#include <sys/types.h>\n' > "$dir/src/transport/b.cc"
  : > "$dir/src/stray.cc"
  out=$(cd "$dir" && include_violations src/transport/a.cc src/transport/b.cc src/stray.cc)
  rm -rf "$dir"
  if [ "$(echo "$out" | grep -c .)" != 3 ] || ! echo "$out" | grep -q "a.cc includes core/" ||
     ! echo "$out" | grep -q "b.cc includes watch/" || ! echo "$out" | grep -q "stray.cc"; then
    echo "include check self-test: planted transport -> core, <watch/...> and a stray file were" \
         "not caught (exactly): $out"
    return 1
  fi
}

# The wings' rules, on a planted violation of each (and two includes they allow).
wing_self_test() {
  local dir out want
  dir=$(mktemp -d)
  mkdir -p "$dir/src/core" "$dir/src/watch" "$dir/src/planes/nccl" "$dir/src/algorithms/arena" \
    "$dir/src/transport/ofi"
  printf '#include "planes/nccl/nccl_comm.h"\n#include "planes/nccl/nccl_plane.h"\n' \
    > "$dir/src/core/planes.cc"
  printf '#include "transport/ofi/endpoint.h"\n' > "$dir/src/core/fabric.cc"
  printf '#include "planes/smddp/stager.h"\n#include "planes/device_work.h"\n' \
    > "$dir/src/planes/nccl/a.cc"
  printf '#include "algorithms/hierarchical.h"\n#include "algorithms/patterns/ring.h"\n' \
    > "$dir/src/algorithms/arena/a.cc"
  printf '#include "algorithms/arena/arena.h"\n' > "$dir/src/watch/a.cc"
  printf '#include "transport/loopback/loopback_transport.h"\n' > "$dir/src/transport/ofi/a.cc"
  out=$(cd "$dir" && wing_violations src/core/planes.cc src/core/fabric.cc src/planes/nccl/a.cc \
        src/algorithms/arena/a.cc src/watch/a.cc src/transport/ofi/a.cc)
  rm -rf "$dir"
  for want in "planes.cc includes planes/nccl/nccl_comm.h" "fabric.cc includes transport/ofi/" \
              "nccl/a.cc includes planes/smddp/" "arena/a.cc includes algorithms/hierarchical" \
              "watch/a.cc includes algorithms/arena/" "ofi/a.cc includes transport/loopback/"; do
    echo "$out" | grep -q "$want" || { echo "wing check self-test: missed \"$want\": $out"; return 1; }
  done
  if [ "$(echo "$out" | grep -c .)" != 6 ]; then
    echo "wing check self-test: expected exactly the 6 planted violations: $out"
    return 1
  fi
}

fail=0
self_test || fail=1
wing_self_test || fail=1
srcs=$(git ls-files 'include/*' 'src/*' 'bench/*' 'tests/*' 'python/*' | grep -E '\.(h|hpp|cc|cpp|cu|cuh|c|py)$')
bad=$(include_violations $srcs)
[ -z "$bad" ] || { echo "$bad"; fail=1; }
bad=$(wing_violations $srcs)
[ -z "$bad" ] || { echo "$bad"; fail=1; }
bad=$(grep -lE '#include\s*[<"]rdma/' $srcs | grep -v '^src/transport/ofi/' || true)
[ -z "$bad" ] || { echo "libfabric headers outside src/transport/ofi: $bad"; fail=1; }
bad=$(grep -lE '\bgetenv\s*\(' $srcs | grep -v '^src/common/config.cc$' || true)
[ -z "$bad" ] || { echo "getenv outside src/common/config.cc: $bad"; fail=1; }
bad=$(grep -lE '#include\s*[<"](torch|ATen|c10)/' $srcs | grep -v '^python/' || true)
[ -z "$bad" ] || { echo "torch headers outside python/: $bad"; fail=1; }
bad=$(grep -lE '#include\s*[<"](cuda|cuda_runtime|cuda_runtime_api|cuda_fp16|cuda_bf16)\.h' $srcs |
      grep -vE '^(src/reduce/cuda/|src/device/cuda/|python/csrc/cuda_|tests/gpu/|bench/[a-z_]*cuda)' ||
      true)
[ -z "$bad" ] || { echo "CUDA headers outside the CUDA parts: $bad"; fail=1; }
bad=$(grep -lE '#include\s*[<"]nccl(_net)?\.h' $srcs | grep -vE '^(src/planes/nccl/|tests/nccl/)' || true)
[ -z "$bad" ] || { echo "nccl.h outside the NCCL plane (src/planes/nccl) and the test NCCL: $bad"; fail=1; }
for f in $srcs; do
  head -2 "$f" | grep -q "SPDX-License-Identifier: Apache-2.0" ||
    { echo "$f: no SPDX-License-Identifier line at the top"; fail=1; }
  n=$(wc -l < "$f")
  [ "$n" -le 500 ] || { echo "$f has $n lines (limit 500)"; fail=1; }
done
[ $fail -eq 0 ] && echo "rules: ok"
exit $fail
