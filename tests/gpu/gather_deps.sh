#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Run on a Debian 12 machine with the project's packages, before a GPU validation run: gathers what
# a GPU machine without them needs into .deps/gpu/ (git-ignored; copy it there with the working
# tree, and run tests/gpu/run_gpu.sh):
#   .deps/gpu/debs/        Debian's libfabric and its runtime dependencies (.deb, unpacked there)
#   .deps/gpu/googletest/  GoogleTest sources (built there if the machine has no GTest)
# Invariant: only copies files; installs nothing on either machine. Size stays a few MiB.
set -euo pipefail
cd "$(dirname "$0")/../.."
dest=.deps/gpu
mkdir -p "$dest/debs"
pkgs=(libfabric1 libfabric-dev ibverbs-providers libibverbs1 librdmacm1 libpsm2-2
      libpsm-infinipath1 libnl-3-200 libnl-route-3-200 libnuma1)
for p in "${pkgs[@]}"; do
  deb=$(ls /var/cache/apt/archives/${p}_*.deb 2>/dev/null | head -1 || true)
  if [ -n "$deb" ]; then
    cp -f "$deb" "$dest/debs/"
  elif (cd "$dest/debs" && apt-get download "$p" >/dev/null 2>&1); then
    :
  else
    echo "gather_deps: $p: no cached .deb and apt-get download failed (fine if the GPU" \
         "machine already has it; ldd there tells)" >&2
  fi
done
if [ -d /usr/src/googletest ]; then
  rm -rf "$dest/googletest"
  cp -r /usr/src/googletest "$dest/googletest"
fi
du -sh "$dest"
ls "$dest/debs"
