// SPDX-License-Identifier: Apache-2.0
// PeerLiveness: notices that a peer process on this host has exited, for providers that never
// report it (shm: sends to a dead peer complete into its queue, receives from it stay pending).
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
  // Returns a watched peer found dead, or -1; each dead peer once (it is no longer watched), so
  // later calls find the others. Checks at most every kInterval (cheap to call often).
  int check();

 private:
  static constexpr std::chrono::milliseconds kInterval{100};
  std::vector<int> watched_;  // ranks
  std::vector<int> pids_;
  std::chrono::steady_clock::time_point next_;
};

}  // namespace smddp::transport::ofi
