#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds docker/Dockerfile locally with podman, without a registry, on a stand-in for the AWS
# training image (Debian 12 + Debian's torch 1.13 in place of a DLC's torch 2.x):
#   image.sh base            print the debootstrapped Debian 12 image, making it when missing
#   image.sh train-base      print the stand-in training image (base + python3-torch), likewise
#   image.sh build [TAG]     build docker/Dockerfile on train-base (localhost/smddp-byoc:test)
# Needs root and a configured podman (scripts/podman_setup.sh). Only the Debian mirror apt uses
# here is contacted. Env: SMDDP_IMAGE_CACHE (default /var/cache/smddp-image), SMDDP_CCACHE_DIR
# (default: the host's ccache directory), SMDDP_BUILD_JOBS.
# Invariants: both base images are tagged by a hash of what made them plus the month, so a second
# run reuses them (and a new month or mirror makes fresh ones, pruning the old); a half-made image
# is never tagged. The build compiles through the host's ccache, with the sources at the host's
# checkout path, so objects the host's builds made are reused (see "ccache" below).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
CACHE=${SMDDP_IMAGE_CACHE:-/var/cache/smddp-image}
SUITE=bookworm
RECIPE=3   # bump when the recipes below change, so cached images are remade
# What a DLC has that matters here: torch with its headers and CMake files (Debian's needs
# libtorch-dev for that), pip, a compiler. Not libfabric nor CMake: the Dockerfile adds those.
TRAIN_PACKAGES="python3-torch libtorch-dev python3-pip build-essential"
LABEL=org.smddp.deploy-test=1   # on every image made here, so pruning touches only ours

say() { echo "image.sh [${SECONDS}s]: $*" >&2; }

# The first enabled "deb" source for $SUITE that apt is configured with, deb822 or one-line, and
# the file that names it (the base image gets that file, so it sees what the host's apt sees).
find_mirror() {
  local f
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v suite="$SUITE" -v file="$f" '
      function flush() {
        if (types ~ /(^| )deb( |$)/ && suites ~ ("(^| )" suite "( |$)") && enabled != "no" \
            && uri != "") { print uri, file; found = 1; exit }
        types = suites = uri = enabled = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
      /^URIs:/ { uri = $2 }
      /^Enabled:/ { enabled = tolower($2) }
      END { if (!found) flush() }' "$f" | head -1 | grep . && return 0
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENTS...
    awk -v suite="$SUITE" -v file="$f" '
      $1 == "deb" { i = 2; if ($2 ~ /^\[/) while (i <= NF && $i !~ /\]$/) i++;
                    if ($2 ~ /^\[/) i++;
                    if ($(i + 1) == suite) { print $i, file; exit } }' "$f" | grep . && return 0
  done
  say "no enabled 'deb' source for $SUITE in /etc/apt"
  return 1
}

key_of() { sha256sum | cut -c1-10; }

# .debs for debootstrap and apt in the builds, one directory each ($1): the Dockerfile's
# `apt-get clean` empties its own. Those the host's apt already fetched from the same mirror are
# hard-linked in first (scripts/run.sh installs torch, the compiler and libfabric on the host),
# so a cold run downloads little; a stale one is fetched again (both tools check hashes).
seed_debs() {
  mkdir -p "$CACHE/$1/partial"
  cp -n -l /var/cache/apt/archives/*.deb "$CACHE/$1/" 2>/dev/null || true
}

# Drops other tags of the same repository (last month's), once the new one exists.
prune_others() {
  local repo=${1%:*} keep=$1 t
  for t in $(podman images --format '{{.Repository}}:{{.Tag}}' --filter "reference=$repo"); do
    [ "$t" = "$keep" ] || podman rmi "$t" >/dev/null 2>&1 || true
  done
}

base_image() {
  local found mirror srcfile key tag rootfs
  found=$(find_mirror) || exit 1
  read -r mirror srcfile <<< "$found"
  key=$( { echo "$RECIPE $mirror"; cat "$srcfile"; } | key_of)
  tag="localhost/smddp-debian:$SUITE-$(date +%Y%m)-$key"
  if ! podman image exists "$tag"; then
    say "making $tag: debootstrap --variant=minbase $SUITE from $mirror"
    seed_debs debs
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    # shellcheck disable=SC2064  # the path is fixed now, on purpose
    trap "rm -rf '$rootfs'" EXIT
    nice debootstrap --variant=minbase --cache-dir="$CACHE/debs" "$SUITE" "$rootfs" "$mirror" \
      > "$CACHE/debootstrap.log" 2>&1 || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    # apt inside sees the host's source list (updates and security too), not debootstrap's one
    # line; the .debs debootstrap leaves behind would only weigh the image down
    rm -f "$rootfs/etc/apt/sources.list" "$rootfs"/var/cache/apt/archives/*.deb
    cp "$srcfile" "$rootfs/etc/apt/sources.list.d/$(basename "$srcfile")"
    tar -C "$rootfs" -c . \
      | podman import -q --change 'CMD ["/bin/bash"]' --change "LABEL $LABEL" - "$tag" >/dev/null
    rm -rf "$rootfs"
    trap - EXIT
    prune_others "$tag"
    say "made $tag"
  fi
  echo "$tag"
}

train_base_image() {
  local base tag ctx
  base=$(base_image)
  tag="localhost/smddp-train-base:torch113-$(echo "$RECIPE $base $TRAIN_PACKAGES" | key_of)"
  if ! podman image exists "$tag"; then
    say "making $tag: $base + $TRAIN_PACKAGES"
    ctx=$(mktemp -d)
    # Debian's torch brings ~370 packages: dpkg without fsync and without docs saves ~30 s.
    cat > "$ctx/Containerfile" <<EOF
FROM $base
RUN printf '%s\n' force-unsafe-io 'path-exclude=/usr/share/doc/*' 'path-exclude=/usr/share/man/*' \\
      'path-exclude=/usr/share/locale/*' > /etc/dpkg/dpkg.cfg.d/zz-smddp-test \\
 && apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $TRAIN_PACKAGES \\
 && rm -rf /var/lib/apt/lists/* /etc/dpkg/dpkg.cfg.d/zz-smddp-test
EOF
    # The .debs land in the cache volume, not in the image: a remade image downloads nothing.
    seed_debs debs
    nice podman build --network=host --volume "$CACHE/debs:/var/cache/apt/archives" \
      --label "$LABEL" -t "$tag" "$ctx" > "$CACHE/train-base.log" 2>&1 \
      || { tail -30 "$CACHE/train-base.log" >&2; rm -rf "$ctx"; exit 1; }
    rm -rf "$ctx"
    prune_others "$tag"
    say "made $tag"
  fi
  echo "$tag"
}

# ccache: the host's builds (scripts/run.sh) compile the same sources with the same compiler from
# the same mirror, so the container can reuse their objects when every input ccache hashes
# matches: paths (sources at the host's checkout path; CCACHE_BASEDIR makes them relative), the
# working directory of -g compiles (hence the same path and build directory names), and the
# locale variables ccache hashes (passed as SMDDP_CCACHE_ENV).
build_image() {
  local tag=${1:-localhost/smddp-byoc:test} base ccache_dir locale_env="" v
  base=$(train_base_image)
  ccache_dir=${SMDDP_CCACHE_DIR:-$(ccache -k cache_dir 2>/dev/null || echo "$CACHE/ccache")}
  mkdir -p "$ccache_dir"
  for v in LANG LC_ALL LC_CTYPE LC_MESSAGES; do
    [ -n "${!v+set}" ] && locale_env+="${locale_env:+ }$v=${!v}"
  done
  say "building $tag on $base (ccache: $ccache_dir)"
  seed_debs debs-build
  nice podman build --network=host --volume "$ccache_dir:/ccache" \
    --volume "$CACHE/debs-build:/var/cache/apt/archives" --label "$LABEL" \
    --build-arg BASE_IMAGE="$base" --build-arg SMDDP_CCACHE=1 \
    --build-arg SMDDP_CCACHE_ENV="$locale_env" --build-arg SMDDP_SRC="$ROOT" \
    ${SMDDP_BUILD_JOBS:+--build-arg SMDDP_BUILD_JOBS="$SMDDP_BUILD_JOBS"} \
    -f docker/Dockerfile -t "$tag" .
  # the image this one replaced, no longer tagged (ours only: the label says so)
  podman image prune -f --filter "label=$LABEL" >/dev/null
  say "built $tag"
  echo "$tag"
}

case "${1:-}" in
  base) base_image ;;
  train-base) train_base_image ;;
  build) build_image "${2:-}" ;;
  *) echo "usage: $0 base|train-base|build [TAG]" >&2; exit 2 ;;
esac
