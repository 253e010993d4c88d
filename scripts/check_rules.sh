#!/usr/bin/env bash
# Mechanical rules of CONTRIBUTING.md: libfabric headers only under src/transport/ofi, getenv only
# in the config parser, torch only under python/, no file over 500 lines.
set -uo pipefail
cd "$(dirname "$0")/.."
fail=0
srcs=$(git ls-files 'include/*' 'src/*' 'bench/*' 'tests/*' 'python/*' | grep -E '\.(h|hpp|cc|cpp|cu|cuh|c|py)$')
bad=$(grep -lE '#include\s*[<"]rdma/' $srcs | grep -v '^src/transport/ofi/' || true)
[ -z "$bad" ] || { echo "libfabric headers outside src/transport/ofi: $bad"; fail=1; }
bad=$(grep -lE '\bgetenv\s*\(' $srcs | grep -v '^src/common/config.cc$' || true)
[ -z "$bad" ] || { echo "getenv outside src/common/config.cc: $bad"; fail=1; }
bad=$(grep -lE '#include\s*[<"](torch|ATen|c10)/' $srcs | grep -v '^python/' || true)
[ -z "$bad" ] || { echo "torch headers outside python/: $bad"; fail=1; }
for f in $srcs; do
  n=$(wc -l < "$f")
  [ "$n" -le 500 ] || { echo "$f has $n lines (limit 500)"; fail=1; }
done
[ $fail -eq 0 ] && echo "rules: ok"
exit $fail
