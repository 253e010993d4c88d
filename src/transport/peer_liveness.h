// SPDX-License-Identifier: Apache-2.0
// PeerLiveness: notices that a peer process on this host has exited, for providers that never
// report it (shm: sends to a dead peer complete into its queue, receives from it stay pending).
// Each peer is watched through a pidfd (one poll() for all of them, no /proc read: reading
// /proc/<pid>/stat costs the kernel a symbol lookup that stalls the caller), or, where pidfds are
// missing (kernels before 5.3), through kill(pid, 0) and the state in /proc/<pid>/stat.
// Invariant: a peer's pid is only watched when the peer published our own pid namespace (the
// kernel's boot id and the namespace's identity: pidWatchable) from our host, and that pid was
// alive at bootstrap. A pid of another namespace (a container on this host) names some other
// process here, or none, so it is never watched: its death would be invented, or missed because
// an unrelated process holds the number. Such peers are left to the other mechanisms (transport
// errors, the progress beacons, the liveness port). No false positives beyond pid reuse.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace smddp::transport {

// This process's PeerInfo::pidNamespace: "<boot id>/<st_dev>:<st_ino>" of /proc/self/ns/pid
// (boot id from /proc/sys/kernel/random/boot_id, which containers share with their host); ""
// when either cannot be read. Read anew at every call (a fork after unshare changes it).
std::string processNamespace();

// Whether `peer`'s pid means a process to us: it runs on `host` in pid namespace `ns` (ours),
// both known, and has a pid.
bool pidWatchable(const PeerInfo& peer, const std::string& host, const std::string& ns);

class PeerLiveness {
 public:
  PeerLiveness(const std::vector<PeerInfo>& peers, int rank);
  ~PeerLiveness();  // closes the pidfds
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;
  // Returns a watched peer found dead, or -1; each dead peer once (it is no longer watched), so
  // later calls find the others. Checks at most every kInterval (cheap to call often).
  int check();
  // Whether `rank`'s pid is watched (for diagnostics and tests).
  bool watches(int rank) const;

 private:
  static constexpr std::chrono::milliseconds kInterval{100};
  std::vector<int> watched_;  // ranks
  std::vector<int> pids_;
  std::vector<int> pidfds_;  // -1 where none could be opened
  void forget(size_t i);
  std::chrono::steady_clock::time_point next_;
};

}  // namespace smddp::transport
