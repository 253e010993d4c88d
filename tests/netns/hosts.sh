#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Two "hosts" on one machine for multi-host tests: network namespaces <tag>a and <tag>b joined by
# a veth pair (<tag>a: 192.0.2.101, <tag>b: 192.0.2.102, /24), each with its own host name
# (nodea, nodeb) when commands are started through `exec`.
#
#   hosts.sh up   TAG            create both namespaces (fails if they already exist)
#   hosts.sh exec TAG a|b CMD..  run CMD inside host a or b, in its own UTS namespace named nodeX
#   hosts.sh link TAG a|b up|down  flap that host's end of the link
#   hosts.sh kill TAG a|b        SIGKILL every process inside that host's namespace
#   hosts.sh down TAG            kill everything inside, delete both namespaces and their files
#
# Invariant: traffic stays between the two namespaces (and each one's own loopback): nothing is
# routed to or from the machine's real interfaces. `down` is idempotent and safe after a failed
# `up`, so callers can run it from a trap / finally. TAG must be short (veth names <= 15 chars).
set -euo pipefail

ADDR_a=192.0.2.101
ADDR_b=192.0.2.102

need_root() {
  [ "$(id -u)" -eq 0 ] || { echo "hosts.sh: needs root (ip netns)" >&2; exit 77; }
  command -v ip >/dev/null || { echo "hosts.sh: 'ip' (iproute2) not found" >&2; exit 77; }
}

check_tag() {
  [[ "$1" =~ ^[a-z][a-z0-9]{0,9}$ ]] || { echo "hosts.sh: bad tag '$1' (a-z0-9, <= 10 chars)" >&2; exit 2; }
}

up() {
  local tag=$1 h
  for h in a b; do
    ip netns add "${tag}${h}"
    mkdir -p "/etc/netns/${tag}${h}"
    # `ip netns exec` bind-mounts these over /etc/hosts: host names resolve inside the "cluster".
    printf '127.0.0.1 localhost\n%s nodea\n%s nodeb\n' "$ADDR_a" "$ADDR_b" \
      > "/etc/netns/${tag}${h}/hosts"
    printf 'node%s\n' "$h" > "/etc/netns/${tag}${h}/hostname"
  done
  ip link add "${tag}va" type veth peer name "${tag}vb"
  for h in a b; do
    local addr_var="ADDR_${h}"
    ip link set "${tag}v${h}" netns "${tag}${h}"
    ip -n "${tag}${h}" addr add "${!addr_var}/24" dev "${tag}v${h}"
    ip -n "${tag}${h}" link set lo up
    ip -n "${tag}${h}" link set "${tag}v${h}" up
  done
}

kill_all() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
}

down() {
  local tag=$1 h i
  for h in a b; do kill_all "${tag}${h}"; done
  for i in 1 2 3 4 5; do  # let the killed processes go before deleting their namespace
    [ -z "$(ip netns pids "${tag}a" 2>/dev/null)$(ip netns pids "${tag}b" 2>/dev/null)" ] && break
    sleep 0.2
  done
  for h in a b; do
    ip netns del "${tag}${h}" 2>/dev/null || true
    rm -rf "/etc/netns/${tag}${h}"
  done
  ip link del "${tag}va" 2>/dev/null || true  # only if it never moved into a namespace
}

cmd=${1:-}
[ $# -ge 2 ] || { sed -n 2,13p "$0" >&2; exit 2; }
tag=$2
need_root
check_tag "$tag"
case "$cmd" in
  up) up "$tag" ;;
  down) down "$tag" ;;
  exec)
    host=$3; shift 3
    exec ip netns exec "${tag}${host}" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
      "node${host}" "$@" ;;
  link) ip -n "${tag}$3" link set "${tag}v$3" "$4" ;;
  kill) kill_all "${tag}$3" ;;
  *) sed -n 2,13p "$0" >&2; exit 2 ;;
esac
