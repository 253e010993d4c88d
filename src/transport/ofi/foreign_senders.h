// SPDX-License-Identifier: Apache-2.0
// Who sent a received message, decided from what the transport knows rather than from what the
// message says. Every member's message carries its sender's rank as remote CQ data, but a process
// outside the group (another job on the host, anything that read an address from the store) can
// send to our endpoint with any data at all. Providers match a receive that names its peer by the
// sender's address, except shm before libfabric 1.19, which lets a sender outside the address
// vector match every receive; a receive from any rank (FI_ADDR_UNSPEC) matches everyone. So the
// claimed rank must lie in the group (and be the named peer, where the receive names one), and
// where the provider reports source addresses reliably (FI_SOURCE, read with fi_cq_readfrom;
// sourceTrusted in provider_profile.h) the address must be the claimed rank's. What fails is a
// foreign message: dropped, counted, and logged at a bounded rate.
// Limits: without trusted sources (shm 1.17, efa, the generic profile) a stranger that claims
// the right member's rank is not told apart. FI_SOURCE names the address the provider attributes
// a message to: an endpoint opened through libfabric has its own, but a process that speaks a
// provider's wire protocol itself could announce a member's (shm: its region name; tcp: its
// listening port on the member's IP).
#pragma once

#include <rdma/fabric.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace smddp::transport::ofi {

constexpr int kForeignSender = -1;

// The rank that sent a completed receive posted for `postedPeer` (kAnyPeer: any rank), or
// kForeignSender. flags/data: the completion's (FI_REMOTE_CQ_DATA: data is the claimed rank);
// source: the provider's source address, used when sourceKnown; addrs: fi_addr_t by rank.
int senderOf(int postedPeer, uint64_t flags, uint64_t data, bool sourceKnown, fi_addr_t source,
             const std::vector<fi_addr_t>& addrs);

// Why senderOf refused a sender, for the log ("claims rank 9999, outside 0..1").
std::string whyForeign(int postedPeer, uint64_t flags, uint64_t data, size_t size);

// The count of dropped foreign messages (read from any thread) and its rate-limited log.
class ForeignDrops {
 public:
  explicit ForeignDrops(int rank) : rank_(rank) {}
  // Counts one dropped message; logs it at WARN when no line was logged in the last kLogEvery,
  // with the count so far. `what`: the receive and why its message was refused.
  void note(const std::string& what);
  uint64_t count() const { return count_.load(std::memory_order_relaxed); }

  static constexpr std::chrono::seconds kLogEvery{10};

 private:
  int rank_;
  std::atomic<uint64_t> count_{0};
  std::chrono::steady_clock::time_point nextLog_{};
};

}  // namespace smddp::transport::ofi
