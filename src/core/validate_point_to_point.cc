// SPDX-License-Identifier: Apache-2.0
// Argument checks of send and recv (validate.h): a usable buffer and a peer in the group other
// than this rank (a recv may also name any rank).
#include <string>

#include "core/validate.h"
#include "core/validate_detail.h"
#include "transport/transport.h"

namespace smddp::core {
namespace {

using namespace check;

algo::CollectiveArgs checkPeerMessage(const CallSite& at, CollectiveKind kind, const Buffer& buf,
                                      int peer, bool anyAllowed) {
  checkBuffer(at, kind, kind == CollectiveKind::kSend ? "send" : "recv", buf);
  const bool any = anyAllowed && peer == transport::kAnyPeer;
  if (!any && (peer < 0 || peer >= at.size)) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "peer " + std::to_string(peer) + " is out of range [0, " + std::to_string(at.size) + ")" +
             (anyAllowed ? " (and not kAnySource)" : ""));
  }
  if (peer == at.rank) {
    fail(at, kind, ErrorCode::kInvalidArgument,
         "peer " + std::to_string(peer) + " is this rank: a rank does not send to itself");
  }
  const bool send = kind == CollectiveKind::kSend;
  algo::CollectiveArgs args(Call::of(kind, buf.dtype, buf.count), send ? buf.data : nullptr,
                            send ? nullptr : buf.data);
  setMemory(at, kind, args, {&buf});
  return args;
}

}  // namespace

algo::CollectiveArgs checkSend(const CallSite& at, const Buffer& buf, int peer) {
  return checkPeerMessage(at, CollectiveKind::kSend, buf, peer, false);
}

algo::CollectiveArgs checkRecv(const CallSite& at, const Buffer& buf, int peer) {
  return checkPeerMessage(at, CollectiveKind::kRecv, buf, peer, true);
}

}  // namespace smddp::core
