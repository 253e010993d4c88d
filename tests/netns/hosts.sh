#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Several "hosts" on one machine for multi-host tests: network namespaces <tag>a, <tag>b, ...
# (up to 4), each with one veth link into a switch namespace <tag>sw that bridges them.
# Host X has address 192.0.2.10N (a: .101, b: .102, ...), the host name nodeX when commands
# are started through `exec`, and the names nodeX and algo-N (SageMaker's host names) resolve
# to it from every host.
#
#   hosts.sh up   TAG [N]         create N hosts (default 2; fails if they already exist)
#   hosts.sh exec TAG X CMD..     run CMD inside host X, in its own UTS namespace named nodeX
#   hosts.sh link TAG X up|down   flap host X's end of its link
#   hosts.sh kill TAG X           SIGKILL every process inside host X's namespace
#   hosts.sh down TAG             kill everything inside, delete every namespace and its files
#   hosts.sh iface TAG X          print the name of host X's network interface
#   hosts.sh cap  TAG X RATE      cap host X's link at RATE (tc units: 1gbit, 100mbit) each way
#                                 (an htb class on both ends of its veth, small packets first;
#                                 `cap TAG X off` lifts it)
#
# Invariant: traffic stays between these namespaces (and each one's own loopback): nothing is
# routed to or from the machine's real interfaces (the bridge lives in <tag>sw, which has no
# address). `down` is idempotent and safe after a failed `up`, so callers can run it from a
# trap / finally. TAG must be short (interface names <= 15 chars).
set -euo pipefail

HOSTS=(a b c d)

need_root() {
  [ "$(id -u)" -eq 0 ] || { echo "hosts.sh: needs root (ip netns)" >&2; exit 77; }
  command -v ip >/dev/null || { echo "hosts.sh: 'ip' (iproute2) not found" >&2; exit 77; }
}

check_tag() {
  [[ "$1" =~ ^[a-z][a-z0-9]{0,9}$ ]] || { echo "hosts.sh: bad tag '$1' (a-z0-9, <= 10 chars)" >&2; exit 2; }
}

addr_of() {  # a -> 192.0.2.101, b -> .102, ...
  local i
  for i in "${!HOSTS[@]}"; do
    [ "${HOSTS[$i]}" = "$1" ] && { echo "192.0.2.$((101 + i))"; return; }
  done
  echo "hosts.sh: unknown host '$1' (a-d)" >&2; exit 2
}

up() {
  local tag=$1 n=$2 i h names=""
  [[ "$n" =~ ^[2-4]$ ]] || { echo "hosts.sh: N must be 2, 3 or 4 (got '$n')" >&2; exit 2; }
  for ((i = 0; i < n; i++)); do
    h=${HOSTS[$i]}
    names+="$(addr_of "$h") node$h algo-$((i + 1))"$'\n'
  done
  ip netns add "${tag}sw"
  ip -n "${tag}sw" link add "${tag}br" type bridge
  ip -n "${tag}sw" link set "${tag}br" up
  for ((i = 0; i < n; i++)); do
    h=${HOSTS[$i]}
    ip netns add "${tag}${h}"
    mkdir -p "/etc/netns/${tag}${h}"
    # `ip netns exec` bind-mounts these over /etc/hosts: host names resolve inside the "cluster".
    printf '127.0.0.1 localhost\n%s' "$names" > "/etc/netns/${tag}${h}/hosts"
    printf 'node%s\n' "$h" > "/etc/netns/${tag}${h}/hostname"
    ip link add "${tag}v${h}" netns "${tag}${h}" type veth peer name "${tag}p${h}" netns "${tag}sw"
    ip -n "${tag}sw" link set "${tag}p${h}" master "${tag}br"
    ip -n "${tag}sw" link set "${tag}p${h}" up
    ip -n "${tag}${h}" addr add "$(addr_of "$h")/24" dev "${tag}v${h}"
    ip -n "${tag}${h}" link set lo up
    ip -n "${tag}${h}" link set "${tag}v${h}" up
  done
}

# The cap on host X's end limits what X sends, on the switch's end what X receives. The burst
# must hold at least one MTU-sized packet per timer tick at RATE; 64 KiB does for rates to
# 10 Gbit/s. The cap of one direction of host X's link: an htb class of RATE, in which packets under 128
# bytes (TCP acknowledgements) go first, as a host's fair queueing would send them. With a single
# queue (a token bucket) the acknowledgements of one direction wait behind the other direction's
# data, and a link loaded both ways, as an all_reduce loads it, carried 0.57-0.76 of RATE each
# way; with this, 0.95 (one TCP stream each way, 1gbit). (This kernel has no fq_codel, sfq or
# netem: htb, tbf, pfifo and the u32 filter are what there is.)
cap_dev() {
  local ns=$1 dev=$2 rate=$3
  tc -n "$ns" qdisc add dev "$dev" root handle 1: htb default 20 r2q 1000
  tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
    burst 64k cburst 64k
  tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:10 htb rate 1mbit ceil "$rate" prio 0 \
    burst 64k cburst 64k quantum 1514
  tc -n "$ns" class add dev "$dev" parent 1:1 classid 1:20 htb rate "$rate" ceil "$rate" prio 1 \
    burst 64k cburst 64k
  tc -n "$ns" qdisc add dev "$dev" parent 1:10 pfifo limit 1000
  tc -n "$ns" qdisc add dev "$dev" parent 1:20 pfifo limit 1000
  # IPv4 total length < 128 (the 16 bits at offset 2, high 9 bits zero)
  tc -n "$ns" filter add dev "$dev" parent 1: protocol ip prio 1 u32 \
    match u16 0x0000 0xff80 at 2 flowid 1:10
}

cap() {
  local tag=$1 h=$2 rate=$3 ns dev ns_dev
  for ns_dev in "${tag}${h}:${tag}v${h}" "${tag}sw:${tag}p${h}"; do
    ns=${ns_dev%%:*}; dev=${ns_dev##*:}
    tc -n "$ns" qdisc del dev "$dev" root 2>/dev/null || true
    [ "$rate" = off ] || cap_dev "$ns" "$dev" "$rate"
  done
}

kill_all() {
  local ns=$1 pids
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
}

down() {
  local tag=$1 h i left
  for h in "${HOSTS[@]}"; do kill_all "${tag}${h}"; done
  for i in 1 2 3 4 5; do  # let the killed processes go before deleting their namespace
    left=""
    for h in "${HOSTS[@]}"; do left+=$(ip netns pids "${tag}${h}" 2>/dev/null || true); done
    [ -z "$left" ] && break
    sleep 0.2
  done
  for h in "${HOSTS[@]}"; do
    ip netns del "${tag}${h}" 2>/dev/null || true
    rm -rf "/etc/netns/${tag}${h}"
  done
  ip netns del "${tag}sw" 2>/dev/null || true
}

cmd=${1:-}
[ $# -ge 2 ] || { sed -n 2,20p "$0" >&2; exit 2; }
tag=$2
need_root
check_tag "$tag"
case "$cmd" in
  up) up "$tag" "${3:-2}" ;;
  down) down "$tag" ;;
  exec)
    host=$3; shift 3
    exec ip netns exec "${tag}${host}" unshare --uts sh -c 'hostname "$0" && exec "$@"' \
      "node${host}" "$@" ;;
  link) ip -n "${tag}$3" link set "${tag}v$3" "$4" ;;
  kill) kill_all "${tag}$3" ;;
  iface) echo "${tag}v$3" ;;
  cap) [ $# -eq 4 ] || { echo "hosts.sh: cap TAG X RATE|off" >&2; exit 2; }; cap "$tag" "$3" "$4" ;;
  *) sed -n 2,20p "$0" >&2; exit 2 ;;
esac
