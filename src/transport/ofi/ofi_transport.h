// SPDX-License-Identifier: Apache-2.0
// OfiTransport: the libfabric data path. post -> fi_tsenddata / fi_tinjectdata (the remote CQ
// data is the sender's rank) / fi_trecv with the Op's fi_context2; progress -> batched fi_cq_read;
// errors -> fi_cq_readerr + fi_cq_strerror. Invariants: every posted Op is in exactly one place
// until it finishes: inside the provider (its context in flight) or in a retry queue (the provider
// said EAGAIN). Sends and receives have separate FIFO queues: each keeps its kind's post order (so
// per-peer message order never changes), and receives never wait behind blocked sends -- a rank
// whose sends are stuck must still post the receives that drain its peers' sends, or two ranks can
// block each other for good. Posting allocates nothing (the context lives in the Op).
#pragma once

#include <rdma/fabric.h>

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "transport/ofi/endpoint.h"
#include "transport/ofi/peer_liveness.h"
#include "transport/ofi/provider_profile.h"
#include "transport/transport.h"

namespace smddp::transport::ofi {

class OfiTransport : public Transport {
 public:
  OfiTransport(std::unique_ptr<Endpoint> endpoint, ProviderProfile profile, int rank, int size,
               std::vector<PeerInfo> peers, std::vector<fi_addr_t> addrs);
  ~OfiTransport() override;  // Endpoint closes ep before cq/av/domain/fabric

  std::string name() const override { return profile_.name; }
  bool hostMemoryOnly() const override { return profile_.hostMemoryOnly; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<PeerInfo>& peers() const override { return peers_; }

  void post(Op& op) override;
  int progress() override;
  bool cancel(Op& op) override;
  bool cancel(const std::vector<Op*>& ops) override;
  int deadPeer() const override { return deadPeer_; }
  bool deviceDirect() const override { return endpoint_->hmem; }
  // fi_mr_regattr with the CUDA interface (cudaRegistration), cached by range; unvalidated: no
  // provider with CUDA HMEM was available to run it.
  void* registerDevice(void* base, size_t bytes, int ordinal) override;
  bool peerGone(int peer) const override {
    return peer >= 0 && peer < size_ && gone_[static_cast<size_t>(peer)];
  }

 private:
  static constexpr int kCqBatch = 16;
  static constexpr int kMaxBatchesPerProgress = 8;  // bounds the time one progress() call takes

  ssize_t tryPost(Op& op);
  void drainRetries(std::deque<Op*>& queue);  // finished ops count in finishedOutsideProgress_
  int pollCq();
  int readCqError();
  void finishWithError(Op& op, const fi_cq_err_entry& err);
  std::string describe(const Op& op) const;
  void notePeerGone(int peer, const std::string& why);

  std::unique_ptr<Endpoint> endpoint_;
  ProviderProfile profile_;
  int rank_;
  int size_;
  std::vector<PeerInfo> peers_;
  std::vector<fi_addr_t> addrs_;
  size_t injectSize_;
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
