// SPDX-License-Identifier: Apache-2.0
// OfiTransport: the libfabric data path. post -> fi_tsenddata / fi_tinjectdata (the remote CQ
// data is the sender's rank) / fi_trecv with the Op's fi_context2; progress -> batched fi_cq_read;
// errors -> fi_cq_readerr + fi_cq_strerror. It keeps transport.h's contract this way: every
// posted Op is in exactly one place until it finishes: inside the provider (its context in
// flight) or in a retry queue (the provider said EAGAIN). Sends and receives have separate FIFO
// queues: each keeps its kind's post order (so per-peer message order never changes), and
// receives never wait behind blocked sends. Posting allocates nothing (the context lives in the
// Op). A receive reports as its source only a member of the group (foreign_senders.h): a message
// from outside it that matched a receive is dropped, counted, and the receive posted again.
#pragma once

#include <rdma/fabric.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/ofi/endpoint.h"
#include "transport/ofi/foreign_senders.h"
#include "transport/ofi/provider_profile.h"
#include "transport/peer_liveness.h"
#include "transport/transport.h"

namespace smddp::transport::ofi {

class OfiTransport : public Transport {
 public:
  OfiTransport(std::unique_ptr<Endpoint> endpoint, ProviderProfile profile, int rank, int size,
               std::vector<PeerInfo> peers, std::vector<fi_addr_t> addrs);
  ~OfiTransport() override;  // Endpoint closes ep before cq/av/domain/fabric

  std::string name() const override { return profile_.name; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<PeerInfo>& peers() const override { return peers_; }

  void post(Op& op) override;
  int progress() override;
  bool cancel(Op& op) override;
  bool cancel(const std::vector<Op*>& ops) override;
  int deadPeer() const override { return deadPeer_; }
  // hostMemoryOnly from the profile (shm); takesDeviceMemory where the endpoint got FI_HMEM; every
  // libfabric endpoint can be reached from outside the group (foreign_senders.h).
  Capabilities capabilities() const override {
    Capabilities caps;
    caps.hostMemoryOnly = profile_.hostMemoryOnly;
    caps.takesDeviceMemory = endpoint_->hmem;
    caps.dropsForeignSenders = true;
    return caps;
  }
  // fi_mr_regattr with the CUDA interface (cudaRegistration), cached by range; unvalidated: no
  // provider with CUDA HMEM was available to run it.
  void* registerDevice(void* base, size_t bytes, int ordinal) override;
  bool peerGone(int peer) const override {
    return peer >= 0 && peer < size_ && gone_[static_cast<size_t>(peer)];
  }
  uint64_t foreignMessagesDropped() const override { return foreign_.count(); }
  // Whether receives from any rank check the provider's source address, not only the claimed
  // rank's range (sourceTrusted in provider_profile.h).
  bool checksSourceAddress() const { return sourceKnown_; }

 private:
  static constexpr int kCqBatch = 16;
  static constexpr int kMaxBatchesPerProgress = 8;  // bounds the time one progress() call takes

  ssize_t tryPost(Op& op);
  void drainRetries(std::deque<Op*>& queue);  // finished ops count in finishedOutsideProgress_
  int pollCq();
  int readCqError();
  void finishWithError(Op& op, const fi_cq_err_entry& err);
  int dropForeign(Op& op, const fi_cq_tagged_entry& entry);
  std::string describe(const Op& op) const;
  void notePeerGone(int peer, const std::string& why);

  std::unique_ptr<Endpoint> endpoint_;
  ProviderProfile profile_;
  int rank_;
  int size_;
  std::vector<PeerInfo> peers_;
  std::vector<fi_addr_t> addrs_;
  size_t injectSize_;
  bool sourceKnown_;  // the provider reports each receive's source address (FI_SOURCE)
  ForeignDrops foreign_;
  const std::vector<Op*>* cancelling_ = nullptr;  // the ops cancel() is withdrawing
  std::deque<Op*> retrySends_;
  std::deque<Op*> retryRecvs_;
  int finishedOutsideProgress_ = 0;  // ops finished inside post()/cancel(), reported by progress()
  int deadPeer_ = -1;                // the first peer found gone
  std::vector<bool> gone_;           // every peer found gone
  PeerLiveness liveness_;
  // CUDA registrations by (address, bytes); closed before the endpoint (declared after it).
  std::map<std::pair<uintptr_t, size_t>, FidPtr<fid_mr>> registrations_;
};

}  // namespace smddp::transport::ofi
