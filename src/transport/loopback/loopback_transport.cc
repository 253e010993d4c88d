// SPDX-License-Identifier: Apache-2.0
// Loopback endpoint: matches this rank's posted receives against its inbox (FIFO per source and
// tag, as libfabric's tagged matching), copies, and completes both sides through atomics.
#include "transport/loopback/loopback_transport.h"

#include <cstring>
#include <new>
#include <string>

#include "common/cpus.h"

namespace smddp::transport {
namespace {

using Message = LoopbackFabric::Message;
static_assert(sizeof(Message) <= sizeof(Op::provider), "Message must fit in Op::provider");

Message* messageOf(Op& op) { return std::launder(reinterpret_cast<Message*>(op.provider)); }

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackFabric> fabric, int rank)
      : fabric_(std::move(fabric)), rank_(rank), peers_(static_cast<size_t>(fabric_->size())) {
    const std::string cpus = common::describeUsableCpus();  // one process: one mask
    for (size_t r = 0; r < peers_.size(); ++r) {
      peers_[r].host = fabric_->hostOf(static_cast<int>(r));
      peers_[r].cpus = cpus;
    }
  }
  ~LoopbackTransport() override {
    for (Op* op : sends_) cancel(*op);
  }

  std::string name() const override { return "loopback"; }
  int rank() const override { return rank_; }
  int size() const override { return fabric_->size(); }
  const std::vector<PeerInfo>& peers() const override { return peers_; }
  int deadPeer() const override { return fabric_->deadRank(); }
  bool peerGone(int peer) const override { return fabric_->isDead(peer); }
  // Host memory of this process only, and no sender outside the fabric's ranks.
  Capabilities capabilities() const override { return Capabilities{}; }

  void post(Op& op) override {
    op.state = OpState::kPending;
    op.source = -1;
    if (op.kind == OpKind::kRecv) {
      recvs_.push_back(&op);
      return;
    }
    Message* m = new (op.provider) Message{rank_, op.tag, op.buffer, op.bytes, {0}};
    auto& box = fabric_->inbox(op.peer);
    {
      std::lock_guard<std::mutex> lock(box.mutex);
      box.messages.push_back(m);
    }
    sends_.push_back(&op);
  }

  int progress() override { return progressRecvs() + progressSends(); }

  bool cancel(Op& op) override {
    if (op.state != OpState::kPending) return true;
    if (op.kind == OpKind::kRecv) {
      eraseOp(recvs_, &op);
    } else {
      Message* m = messageOf(op);
      auto& box = fabric_->inbox(op.peer);
      bool withdrawn = false;
      {
        std::lock_guard<std::mutex> lock(box.mutex);
        for (auto it = box.messages.begin(); it != box.messages.end(); ++it) {
          if (*it == m) {
            box.messages.erase(it);
            withdrawn = true;
            break;
          }
        }
      }
      eraseOp(sends_, &op);
      if (!withdrawn) {  // the receiver consumed it first: the send completed
        op.state = m->status.load(std::memory_order_acquire) == 1 ? OpState::kDone : OpState::kError;
        return true;
      }
    }
    op.state = OpState::kError;
    op.error = "cancelled";
    return true;
  }

 private:
  static void eraseOp(std::vector<Op*>& ops, Op* op) {
    for (auto it = ops.begin(); it != ops.end(); ++it) {
      if (*it == op) {
        ops.erase(it);
        return;
      }
    }
  }

  // Receives are matched in post order; each takes the oldest message with its source and tag.
  int progressRecvs() {
    if (recvs_.empty()) return 0;
    int finished = 0;
    auto& box = fabric_->inbox(rank_);
    std::lock_guard<std::mutex> lock(box.mutex);
    for (auto it = recvs_.begin(); it != recvs_.end();) {
      Op& op = **it;
      auto msg = box.messages.begin();
      auto matches = [&op](const Message* m) {
        return (op.peer == kAnyPeer || m->source == op.peer) && m->tag == op.tag;
      };
      while (msg != box.messages.end() && !matches(*msg)) ++msg;
      if (msg == box.messages.end()) {
        ++it;
        continue;
      }
      Message* m = *msg;
      box.messages.erase(msg);
      if (m->bytes > op.bytes) {
        op.state = OpState::kError;
        op.error = "message of " + std::to_string(m->bytes) + " B truncated: receive buffer has " +
                   std::to_string(op.bytes) + " B";
        m->status.store(2, std::memory_order_release);
      } else {
        if (m->bytes > 0) std::memcpy(op.buffer, m->data, m->bytes);
        op.received = m->bytes;
        op.source = m->source;
        op.state = OpState::kDone;
        m->status.store(1, std::memory_order_release);
      }
      it = recvs_.erase(it);
      ++finished;
    }
    return finished;
  }

  int progressSends() {
    int finished = 0;
    for (auto it = sends_.begin(); it != sends_.end();) {
      Op& op = **it;
      const int status = messageOf(op)->status.load(std::memory_order_acquire);
      if (status == 0) {
        ++it;
        continue;
      }
      if (status == 1) {
        op.state = OpState::kDone;
      } else {
        op.state = OpState::kError;
        op.error = "receiver's buffer too small for " + std::to_string(op.bytes) + " B";
      }
      it = sends_.erase(it);
      ++finished;
    }
    return finished;
  }

  std::shared_ptr<LoopbackFabric> fabric_;
  int rank_;
  std::vector<PeerInfo> peers_;
  std::vector<Op*> recvs_;
  std::vector<Op*> sends_;
};

}  // namespace

LoopbackFabric::LoopbackFabric(int size)
    : killed_(std::make_unique<std::atomic<bool>[]>(static_cast<size_t>(size))) {  // all false
  for (int i = 0; i < size; ++i) inboxes_.push_back(std::make_unique<Inbox>());
}

std::shared_ptr<LoopbackFabric> LoopbackFabric::create(int size, std::vector<std::string> hosts) {
  auto fabric = std::shared_ptr<LoopbackFabric>(new LoopbackFabric(size));
  if (hosts.size() == static_cast<size_t>(size)) fabric->hosts_ = std::move(hosts);
  return fabric;
}

std::unique_ptr<Transport> LoopbackFabric::endpoint(int rank) {
  return std::make_unique<LoopbackTransport>(shared_from_this(), rank);
}

void LoopbackFabric::kill(int rank) {
  killed_[static_cast<size_t>(rank)].store(true, std::memory_order_release);
  int expected = -1;
  dead_.compare_exchange_strong(expected, rank, std::memory_order_acq_rel);
}

}  // namespace smddp::transport
