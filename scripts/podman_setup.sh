#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Makes rootful podman usable on a fresh Debian 12 machine (no registry reachable), for the image
# test (tests/deploy/test_image.py) and anyone building docker/Dockerfile locally:
#   bash scripts/podman_setup.sh          installs what is missing, writes containers.conf, checks
# Invariants: idempotent (a second run changes nothing); /etc/containers/containers.conf is
# written only when absent or when it carries our marker line, so a configuration someone else
# wrote is never replaced: we say what it lacks instead. Needs root.
set -euo pipefail

CONF=${PODMAN_SETUP_CONF:-/etc/containers/containers.conf}
MARKER="# written by smddp scripts/podman_setup.sh"
# catatonit: podman builds its pod "pause" image from it (podman play kube), nothing to pull.
PACKAGES=(podman buildah debootstrap runc uidmap catatonit)

say() { echo "podman_setup: $*" >&2; }

[ "$(id -u)" -eq 0 ] || { say "needs root (rootful podman, debootstrap)"; exit 77; }

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  say "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >/dev/null
fi

# Why each setting: crun fails on this kind of host (hybrid cgroup v1) and runc does not; without
# systemd as init there is no systemd cgroup manager nor journald; the default ulimits ask for
# more than such a container may raise, so every `podman run` failed until they were set.
desired() {
  cat <<EOF
$MARKER (overwritten by it; remove this line to keep your own edits)
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
}

if [ ! -e "$CONF" ] || head -1 "$CONF" | grep -qF "$MARKER"; then
  if ! cmp -s <(desired) "$CONF" 2>/dev/null; then
    mkdir -p "$(dirname "$CONF")"
    desired > "$CONF.tmp.$$"
    mv "$CONF.tmp.$$" "$CONF"
    say "wrote $CONF"
  fi
else
  # Someone else's file: report what differs from ours, change nothing.
  for key in runtime cgroup_manager events_logger default_ulimits; do
    want=$(desired | grep "^$key =")
    grep -qxF "$want" "$CONF" || say "$CONF is not ours and lacks: $want"
  done
fi

# The check that matters: a container starts. It needs an image with /bin/true: one that
# tests/deploy/image.sh made (labelled), when there is one; otherwise the first build is the check.
img=$(podman images -q --filter label=org.smddp.deploy-test=1 | head -1 || true)
if [ -n "$img" ]; then
  if ! out=$(timeout 60 podman run --rm --network=none "$img" true 2>&1); then
    say "podman cannot start a container from $img:"
    echo "$out" | tail -20 >&2
    exit 1
  fi
fi
say "podman $(podman version --format '{{.Client.Version}}') ready," \
  "runtime $(podman info --format '{{.Host.OCIRuntime.Name}}')"
