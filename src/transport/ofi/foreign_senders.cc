// SPDX-License-Identifier: Apache-2.0
// Senders checked against the group (see foreign_senders.h).
#include "transport/ofi/foreign_senders.h"

#include <rdma/fi_eq.h>

#include "common/logging.h"
#include "transport/transport.h"

namespace smddp::transport::ofi {

int senderOf(int postedPeer, uint64_t flags, uint64_t data, bool sourceKnown, fi_addr_t source,
             const std::vector<fi_addr_t>& addrs) {
  if ((flags & FI_REMOTE_CQ_DATA) == 0 || data >= addrs.size()) return kForeignSender;
  const auto rank = static_cast<int>(data);
  if (postedPeer != kAnyPeer && rank != postedPeer) return kForeignSender;
  if (sourceKnown && source != addrs[static_cast<size_t>(rank)]) return kForeignSender;
  return rank;
}

std::string whyForeign(int postedPeer, uint64_t flags, uint64_t data, size_t size) {
  if ((flags & FI_REMOTE_CQ_DATA) == 0) return "carries no sender rank";
  const std::string claim = "claims rank " + std::to_string(data);
  if (data >= size) return claim + ", outside 0.." + std::to_string(size - 1);
  if (postedPeer != kAnyPeer && static_cast<int>(data) != postedPeer) {
    return claim + " to a receive from rank " + std::to_string(postedPeer);
  }
  return claim + " but comes from another address than that rank's";
}

void ForeignDrops::note(const std::string& what) {
  const uint64_t n = count_.fetch_add(1, std::memory_order_relaxed) + 1;
  const auto now = std::chrono::steady_clock::now();
  if (now < nextLog_) return;
  nextLog_ = now + kLogEvery;
  SMDDP_WARN(rank_, "dropped a message from a sender outside the group: "
                        << what << "; " << n << " such message(s) dropped so far (the receive "
                        << "waits on; this line comes at most every " << kLogEvery.count()
                        << " s)");
}

}  // namespace smddp::transport::ofi
