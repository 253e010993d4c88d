// SPDX-License-Identifier: Apache-2.0
// PeerLiveness: notices that a peer process on this host has exited, for providers that never
// report it (shm: sends to a dead peer complete into its queue, receives from it stay pending).
// Each peer is watched through a pidfd (one poll() for all of them, no /proc read: reading
// /proc/<pid>/stat costs the kernel a symbol lookup that stalls the caller), or, where pidfds are
// missing (kernels before 5.3), through kill(pid, 0) and the state in /proc/<pid>/stat.
// Invariant: a peer is only watched if it was visibly alive at bootstrap (same host name and its
// pid answered kill(pid, 0)); a peer in another pid namespace or on another host is never
// declared dead by this probe, so it has no false positives beyond pid reuse.
#pragma once

#include <chrono>
#include <vector>

#include "transport/transport.h"

namespace smddp::transport::ofi {

class PeerLiveness {
 public:
  PeerLiveness(const std::vector<PeerInfo>& peers, int rank);
  ~PeerLiveness();  // closes the pidfds
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;
  // Returns a watched peer found dead, or -1; each dead peer once (it is no longer watched), so
  // later calls find the others. Checks at most every kInterval (cheap to call often).
  int check();

 private:
  static constexpr std::chrono::milliseconds kInterval{100};
  std::vector<int> watched_;  // ranks
  std::vector<int> pids_;
  std::vector<int> pidfds_;  // -1 where none could be opened
  void forget(size_t i);
  std::chrono::steady_clock::time_point next_;
};

}  // namespace smddp::transport::ofi
