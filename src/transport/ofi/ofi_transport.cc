// SPDX-License-Identifier: Apache-2.0
// OfiTransport data path (see ofi_transport.h for the invariants).
#include "transport/ofi/ofi_transport.h"

#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <type_traits>

#include "common/logging.h"
#include "transport/ofi/libfabric_api.h"

namespace smddp::transport::ofi {
namespace {

static_assert(sizeof(fi_context2) <= sizeof(Op::provider), "Op::provider must hold fi_context2");
static_assert(alignof(fi_context2) <= 16, "Op::provider is 16-byte aligned");
static_assert(std::is_standard_layout_v<Op>, "Op::provider must sit at the Op's own address");

// The context we give libfabric is the Op's provider scratch, which is the Op's first member.
void* contextOf(Op& op) { return op.provider; }
Op* opOf(void* context) { return reinterpret_cast<Op*>(context); }

char gZeroByteTarget;  // some providers dislike a null buffer even for 0 bytes

void* bufferOf(const Op& op) { return op.buffer != nullptr ? op.buffer : &gZeroByteTarget; }

std::string hexTag(uint64_t tag) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(tag));
  return buf;
}

}  // namespace

OfiTransport::OfiTransport(std::unique_ptr<Endpoint> endpoint, ProviderProfile profile, int rank,
                           int size, std::vector<PeerInfo> peers, std::vector<fi_addr_t> addrs)
    : endpoint_(std::move(endpoint)),
      profile_(std::move(profile)),
      rank_(rank),
      size_(size),
      peers_(std::move(peers)),
      addrs_(std::move(addrs)),
      injectSize_(endpoint_->info->tx_attr->inject_size),
      sourceKnown_(sourceTrusted(profile_, *endpoint_->info)),
      foreign_(rank),
      gone_(static_cast<size_t>(size), false),
      liveness_(peers_, rank) {}

OfiTransport::~OfiTransport() {
  // ProviderProfile::closeLinger: poll before the endpoint closes (Endpoint's destructor).
  const auto until = std::chrono::steady_clock::now() + profile_.closeLinger;
  while (std::chrono::steady_clock::now() < until) {
    try {
      pollCq();
    } catch (const std::exception&) {
      return;  // the endpoint failed: nothing more will move
    }
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

std::string OfiTransport::describe(const Op& op) const {
  std::string who = op.peer == kAnyPeer ? "any rank" : "rank " + std::to_string(op.peer);
  if (op.peer >= 0 && op.peer < size_) {
    who += " (" + peers_[op.peer].host + ", pid " + std::to_string(peers_[op.peer].pid) + ")";
  }
  return "rank " + std::to_string(rank_) + ": " + profile_.name + " " +
         (op.kind == OpKind::kSend ? "send of " : "recv of ") + std::to_string(op.bytes) +
         " bytes " + (op.kind == OpKind::kSend ? "to " : "from ") + who + ", tag " + hexTag(op.tag);
}

void OfiTransport::post(Op& op) {
  const bool anyPeer = op.peer == kAnyPeer && op.kind == OpKind::kRecv;
  if (!anyPeer && (op.peer < 0 || op.peer >= size_)) {
    throw Error(ErrorCode::kInvalidArgument,
                describe(op) + ": peer out of range 0.." + std::to_string(size_ - 1));
  }
  op.state = OpState::kPending;
  op.received = 0;
  op.source = -1;
  op.error.clear();
  std::deque<Op*>& queue = op.kind == OpKind::kSend ? retrySends_ : retryRecvs_;
  if (!queue.empty()) {  // never overtake an earlier queued post of the same kind
    queue.push_back(&op);
    return;
  }
  ssize_t rc = tryPost(op);
  if (rc == -FI_EAGAIN) {
    // The provider may be out of tx/rx slots until completions are read: read, then try again.
    finishedOutsideProgress_ += pollCq();
    rc = tryPost(op);
  }
  if (rc == -FI_EAGAIN) queue.push_back(&op);
}

// 0: posted (or done at once); -FI_EAGAIN: try later; other errors finish the op with kError.
ssize_t OfiTransport::tryPost(Op& op) {
  fid_ep* ep = endpoint_->ep.get();
  const fi_addr_t addr = op.peer == kAnyPeer ? FI_ADDR_UNSPEC : addrs_[op.peer];
  ssize_t rc;
  bool injected = false;
  if (op.kind == OpKind::kSend && op.bytes <= injectSize_ && op.desc == nullptr) {
    // Small host sends are copied out at once and produce no completion.
    rc = fi_tinjectdata(ep, bufferOf(op), op.bytes, rank_, addr, op.tag);
    injected = true;
  } else if (op.kind == OpKind::kSend) {
    rc = fi_tsenddata(ep, bufferOf(op), op.bytes, op.desc, rank_, addr, op.tag, contextOf(op));
  } else {
    // Exact tags only: shm 1.17 matches a receive against an already-arrived message with the
    // ignore mask of whichever receive last used that slot, so a nonzero mask (anywhere on the
    // endpoint) can lose or mismatch messages. kAnyPeer is FI_ADDR_UNSPEC instead.
    rc = fi_trecv(ep, bufferOf(op), op.bytes, op.desc, addr, op.tag, 0, contextOf(op));
  }
  if (rc < 0 && postWouldBlock(profile_, static_cast<int>(-rc))) rc = -FI_EAGAIN;
  if (rc == 0 && injected) {
    op.state = OpState::kDone;
    ++finishedOutsideProgress_;
  } else if (rc != 0 && rc != -FI_EAGAIN) {
    op.state = OpState::kError;
    op.error = describe(op) + ": post failed: " + libfabric().strerror(static_cast<int>(-rc));
    ++finishedOutsideProgress_;
    if (meansPeerGone(profile_, static_cast<int>(-rc))) notePeerGone(op.peer, op.error);
  }
  return rc;
}

void OfiTransport::drainRetries(std::deque<Op*>& queue) {
  while (!queue.empty()) {
    if (tryPost(*queue.front()) == -FI_EAGAIN) break;
    queue.pop_front();
  }
}

int OfiTransport::progress() {
  int finished = pollCq();
  drainRetries(retryRecvs_);
  drainRetries(retrySends_);
  int dead = liveness_.check();
  if (dead >= 0) notePeerGone(dead, "its process (pid " + std::to_string(peers_[dead].pid) +
                                        ") has exited");
  finished += finishedOutsideProgress_;
  finishedOutsideProgress_ = 0;
  return finished;
}

int OfiTransport::pollCq() {
  int finished = 0;
  fi_cq_tagged_entry entries[kCqBatch];
  fi_addr_t sources[kCqBatch];
  for (int batch = 0; batch < kMaxBatchesPerProgress; ++batch) {
    ssize_t n = sourceKnown_ ? fi_cq_readfrom(endpoint_->cq.get(), entries, kCqBatch, sources)
                             : fi_cq_read(endpoint_->cq.get(), entries, kCqBatch);
    if (n == -FI_EAGAIN) break;
    if (n == -FI_EAVAIL) {
      finished += readCqError();
      continue;
    }
    if (n < 0) {
      throw Error(ErrorCode::kTransport, "rank " + std::to_string(rank_) + ": " + profile_.name +
                                             " fi_cq_read failed: " +
                                             libfabric().strerror(static_cast<int>(-n)));
    }
    for (ssize_t i = 0; i < n; ++i) {
      Op* op = opOf(entries[i].op_context);
      if (op->kind == OpKind::kRecv) {
        const int sender = senderOf(op->peer, entries[i].flags, entries[i].data, sourceKnown_,
                                    sourceKnown_ ? sources[i] : FI_ADDR_NOTAVAIL, addrs_);
        if (sender == kForeignSender) {
          finished += dropForeign(*op, entries[i]);
          continue;
        }
        op->received = entries[i].len;
        op->source = sender;
      }
      op->state = OpState::kDone;
      ++finished;
    }
    if (n < kCqBatch) break;
  }
  return finished;
}

// A message from outside the group matched op (foreign_senders.h). It is not delivered, though
// its bytes are in op's buffer already: op goes back to the provider with the same buffer, ahead
// of the receives still queued for retry, and its caller waits on, bounded by its own timeout.
// Returns 1 when op finished instead (cancel() is withdrawing it), else 0 (a failed re-post
// finishes it through finishedOutsideProgress_, as every failed post does).
int OfiTransport::dropForeign(Op& op, const fi_cq_tagged_entry& entry) {
  foreign_.note(describe(op) + ": a message of " + std::to_string(entry.len) + " bytes that " +
                whyForeign(op.peer, entry.flags, entry.data, addrs_.size()));
  if (cancelling_ != nullptr &&
      std::find(cancelling_->begin(), cancelling_->end(), &op) != cancelling_->end()) {
    op.state = OpState::kError;
    op.error = describe(op) + ": cancelled";
    return 1;
  }
  if (tryPost(op) == -FI_EAGAIN) retryRecvs_.push_front(&op);
  return 0;
}

int OfiTransport::readCqError() {
  fi_cq_err_entry err{};
  ssize_t rc = fi_cq_readerr(endpoint_->cq.get(), &err, 0);
  if (rc == -FI_EAGAIN) return 0;
  if (rc < 0) {
    throw Error(ErrorCode::kTransport, "rank " + std::to_string(rank_) + ": " + profile_.name +
                                           " fi_cq_readerr failed: " +
                                           libfabric().strerror(static_cast<int>(-rc)));
  }
  if (err.op_context == nullptr) {  // an error not tied to one of our ops
    SMDDP_WARN(rank_, profile_.name << " reported an error without an operation: "
                                    << libfabric().strerror(err.err));
    return 0;
  }
  finishWithError(*opOf(err.op_context), err);
  return 1;
}

void OfiTransport::finishWithError(Op& op, const fi_cq_err_entry& entry) {
  fi_cq_err_entry err = entry;
  err.err = err.err < 0 ? -err.err : err.err;  // shm reports -FI_ETRUNC, the others +FI_E*
  op.state = OpState::kError;
  if (err.err == FI_ECANCELED) {
    op.error = describe(op) + ": cancelled";
    return;
  }
  char detail[256] = {0};
  fi_cq_strerror(endpoint_->cq.get(), err.prov_errno, err.err_data, detail, sizeof(detail));
  if (err.err == FI_ETRUNC) {
    // shm and tcp;ofi_rxm leave len and olen at 0, so the sender's size is not always known.
    op.received = err.len;
    op.error = describe(op) + ": message truncated: the sender's message is larger than the " +
               "posted buffer of " + std::to_string(op.bytes) + " bytes" +
               (err.olen > 0 ? " (" + std::to_string(err.olen) + " bytes did not fit)" : "") +
               (detail[0] != '\0' ? std::string("; provider: ") + detail : std::string());
    return;
  }
  op.error = describe(op) + ": " + libfabric().strerror(err.err) + " (provider errno " +
             std::to_string(err.prov_errno) + ": " + detail + ")";
  if (meansPeerGone(profile_, err.err)) notePeerGone(op.peer, op.error);
}

void OfiTransport::notePeerGone(int peer, const std::string& why) {
  if (peer < 0 || peer >= size_ || gone_[static_cast<size_t>(peer)]) return;
  gone_[static_cast<size_t>(peer)] = true;
  if (deadPeer_ < 0) deadPeer_ = peer;
  SMDDP_WARN(rank_, "peer rank " << peer << " (" << peers_[peer].host << ") is gone: " << why);
}

bool OfiTransport::cancel(Op& op) { return cancel(std::vector<Op*>{&op}); }

// Every cancel is issued first, then the completion queue is drained once, so N ops that the
// provider cannot withdraw (sends, mostly) cost one bound, not N.
bool OfiTransport::cancel(const std::vector<Op*>& ops) {
  // A foreign message completing one of these meanwhile must not post it again (dropForeign).
  cancelling_ = &ops;
  struct Reset {
    const std::vector<Op*>*& slot;
    ~Reset() { slot = nullptr; }
  } reset{cancelling_};
  bool anyPending = false;
  for (Op* op : ops) {
    if (op->state != OpState::kPending) continue;
    std::deque<Op*>& queue = op->kind == OpKind::kSend ? retrySends_ : retryRecvs_;
    auto queued = std::find(queue.begin(), queue.end(), op);
    if (queued != queue.end()) {  // never reached the provider
      queue.erase(queued);
      op->state = OpState::kError;
      op->error = describe(*op) + ": cancelled";
      ++finishedOutsideProgress_;
      continue;
    }
    // An op that already finished in the provider is not cancellable; its completion comes anyway.
    (void)fi_cancel(&endpoint_->ep->fid, contextOf(*op));
    anyPending = true;
  }
  if (!anyPending) return true;
  auto pending = [&ops] {
    for (const Op* op : ops) {
      if (op->state == OpState::kPending) return true;
    }
    return false;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (pending() && std::chrono::steady_clock::now() < deadline) {
    finishedOutsideProgress_ += pollCq();
    if (pending()) std::this_thread::yield();
  }
  return !pending();
}

void* OfiTransport::registerDevice(void* base, size_t bytes, int ordinal) {
  if (!endpoint_->hmem) return Transport::registerDevice(base, bytes, ordinal);
  const auto key = std::make_pair(reinterpret_cast<uintptr_t>(base), bytes);
  auto it = registrations_.find(key);
  if (it == registrations_.end()) {
    iovec iov{};
    fi_mr_attr attr{};
    cudaRegistration(base, bytes, ordinal, &iov, &attr);
    fid_mr* mr = nullptr;
    const int rc = fi_mr_regattr(endpoint_->domain.get(), &attr, 0, &mr);
    if (rc != 0) throwFi(rank_, profile_.name, "fi_mr_regattr(FI_HMEM_CUDA)", rc);
    it = registrations_.emplace(key, FidPtr<fid_mr>(mr)).first;
  }
  return fi_mr_desc(it->second.get());
}

}  // namespace smddp::transport::ofi
