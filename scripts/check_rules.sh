#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Mechanical rules of CONTRIBUTING.md: includes point down the layers (the layering below, written
# once), libfabric headers only under src/transport/ofi, getenv only in the config parser, torch
# only under python/, CUDA headers only in the CUDA parts, nccl.h only in the NCCL plane, an SPDX license line at the top of every source file, no file over 500
# lines. Before checking the tree, the include check is run on a planted wrong include and must
# catch it (a check that cannot fail is no check).
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

fail=0
self_test || fail=1
srcs=$(git ls-files 'include/*' 'src/*' 'bench/*' 'tests/*' 'python/*' | grep -E '\.(h|hpp|cc|cpp|cu|cuh|c|py)$')
bad=$(include_violations $srcs)
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
