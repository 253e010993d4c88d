// SPDX-License-Identifier: Apache-2.0
// An in-process, deterministic transport: every rank of a communicator is a thread of this
// process. Used by the algorithm and collective tests to run 1-16 ranks without a network.
//
// Semantics are deliberately strict (rendezvous): a send completes only after the receiver has
// copied its data, and the copy reads the sender's buffer at match time. An algorithm that reuses a
// send buffer before the send completed, or that waits on a send before posting the matching
// receive where a real fabric could deadlock, fails here too instead of passing by luck.
#pragma once

#include <atomic>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "transport/transport.h"

namespace smddp::transport {

class LoopbackFabric : public std::enable_shared_from_this<LoopbackFabric> {
 public:
  // hosts: the host name each rank reports (PeerInfo::host; one per rank), so that one process
  // can stand for several hosts; empty: every rank on "loopback".
  static std::shared_ptr<LoopbackFabric> create(int size, std::vector<std::string> hosts = {});
  std::string hostOf(int rank) const {
    return hosts_.empty() ? "loopback" : hosts_[static_cast<size_t>(rank)];
  }
  // The endpoint of one rank; the fabric outlives every endpoint (they hold a reference).
  std::unique_ptr<Transport> endpoint(int rank);
  int size() const { return static_cast<int>(inboxes_.size()); }

  // Marks a rank dead (fault tests): every endpoint then reports it through deadPeer() (the
  // first killed) and peerGone().
  void kill(int rank);
  int deadRank() const { return dead_.load(std::memory_order_acquire); }
  bool isDead(int rank) const {
    return rank >= 0 && rank < size() &&
           killed_[static_cast<size_t>(rank)].load(std::memory_order_acquire);
  }

  // A send in flight, stored inside the sender's Op::provider area.
  struct Message {
    int source;
    uint64_t tag;
    const void* data;
    size_t bytes;
    std::atomic<int> status;  // 0 in flight, 1 consumed, 2 receiver's buffer too small, 3 cancelled
  };
  struct Inbox {
    std::mutex mutex;
    std::deque<Message*> messages;
  };
  Inbox& inbox(int rank) { return *inboxes_[static_cast<size_t>(rank)]; }

 private:
  explicit LoopbackFabric(int size);
  std::vector<std::unique_ptr<Inbox>> inboxes_;
  std::vector<std::string> hosts_;
  std::atomic<int> dead_{-1};
  std::unique_ptr<std::atomic<bool>[]> killed_;
};

}  // namespace smddp::transport
