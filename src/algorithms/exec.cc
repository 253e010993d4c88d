// SPDX-License-Identifier: Apache-2.0
// Exec: posts an algorithm's messages with the collective's tags and waits for them with a bounded
// back-off. Waiting: busy-poll for the communicator's WaitPolicy spin after the last progress
// (lowest latency), then pause (yield the core; after long idling also sleep now and then);
// common/wait_policy.h says how long the spin is and why.
#include "algorithms/exec.h"

#include <algorithm>

#include "common/logging.h"
#include "common/tag.h"
#include "smddp/error.h"

namespace smddp::algo {

using transport::Op;
using transport::OpKind;
using transport::OpState;
// At most how long a rank that finds a peer gone waits for that peer's announced error, if any
// (it usually knows after one beacon round: milliseconds; a loaded host can take longer).
constexpr std::chrono::milliseconds kVerdictGrace{3000};

// How long a rank that found a peer in another collective (arena identity check) waits for the
// progress beacons to name both calls.
constexpr std::chrono::milliseconds kMismatchGrace{3000};

transport::Op& ExecResources::op(size_t index) {
  while (ops_.size() <= index) ops_.emplace_back();
  return ops_[index];
}

void* ExecResources::scratch(int index, size_t bytes) {
  const auto i = static_cast<size_t>(index);
  if (scratch_.size() <= i) scratch_.resize(i + 1);
  if (scratch_[i].size() < bytes) scratch_[i].resize(bytes);
  return scratch_[i].data();
}

Exec::Exec(transport::Transport& transport, ExecResources& resources, const CollectiveDesc& desc,
           const ExecSettings& settings, Clock::time_point deadline)
    : transport_(transport),
      resources_(resources),
      desc_(desc),
      settings_(settings),
      deadline_(deadline),
      rank_(transport.rank()),
      size_(transport.size()) {}

Exec::Exec(Exec& parent, const std::vector<int>& members, const ExecSettings& settings,
           uint64_t msgBase)
    : transport_(parent.transport_),
      resources_(parent.resources_),
      desc_(parent.desc_),
      settings_(settings),
      deadline_(parent.deadline_),
      rank_(-1),
      size_(static_cast<int>(members.size())),
      members_(&members),
      msgBase_(msgBase),
      posted_(parent.posted_),
      firstLive_(parent.posted_) {
  const int me = transport_.rank();
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == me) rank_ = static_cast<int>(i);
  }
  if (rank_ < 0 || parent.firstLive_ < parent.posted_) {
    throw Error(ErrorCode::kInternal, errorHead(me) + ": " + desc_.describe() + ": a group view " +
                                          (rank_ < 0 ? "without this rank" : "over pending ops"));
  }
}

Exec::~Exec() {
  // Normal paths end with waitAll(); this only runs after an exception.
  if (firstLive_ < posted_) cancelAll();
}

Exec::Handle Exec::isend(int peer, uint64_t msg, const void* buffer, size_t bytes) {
  return post(OpKind::kSend, peer, msg, const_cast<void*>(buffer), bytes);
}

Exec::Handle Exec::irecv(int peer, uint64_t msg, void* buffer, size_t bytes) {
  return post(OpKind::kRecv, peer, msg, buffer, bytes);
}

Exec::Handle Exec::post(OpKind kind, int peer, uint64_t msg, void* buffer, size_t bytes) {
  if (peer < 0 || peer >= size_ || peer == rank_) {
    throw Error(ErrorCode::kInternal, head() + ": algorithm addressed peer " +
                                          std::to_string(peer) + " of " + std::to_string(size_));
  }
  msg += msgBase_;
  if (msg > tag::kMaxMsg) {
    throw Error(ErrorCode::kInternal,
                head() + ": message index " + std::to_string(msg) + " exceeds the tag layout");
  }
  Op& op = resources_.op(posted_);
  op.kind = kind;
  op.state = OpState::kIdle;
  op.peer = toTransport(peer);  // ops name transport ranks
  op.tag = tag::make(desc_.kind, desc_.seq, msg, desc_.signature);
  op.buffer = buffer;
  op.bytes = bytes;
  op.received = 0;
  op.error.clear();
  const Handle handle = posted_++;
  transport_.post(op);
  if (op.failed()) checkFailure(op);
  return handle;
}

common::WaitPolicy& Exec::waiting() const {
  static common::WaitPolicy fallback = common::WaitPolicy::fixed(std::chrono::microseconds(20));
  return settings_.waiting != nullptr ? *settings_.waiting : fallback;
}

void Exec::wait(Handle handle) {
  Op& op = resources_.op(handle);
  common::WaitPolicy& waiting = this->waiting();
  auto lastProgress = Clock::now();
  // The policy is asked for a spin at a stretch's first idle poll only, and told how the stretch
  // went only then: polls that progress at once cost it nothing.
  constexpr std::chrono::nanoseconds kNotIdle{-1};
  auto spin = kNotIdle;
  int idlePolls = 0;
  while (!op.finished()) {
    const int n = transport_.progress();
    const bool done = op.finished();
    if (!done && n == 0) {
      if (spin == kNotIdle) spin = waiting.spinFor();
      idle(Clock::now(), lastProgress, spin, idlePolls, -1, nullptr);
      continue;
    }
    const auto now = Clock::now();
    if (spin != kNotIdle) waiting.ended(now - lastProgress, spin);  // what its spin was worth
    if (done) break;
    lastProgress = now;
    idlePolls = 0;
    spin = kNotIdle;
  }
  checkFailure(op);
  // Ops that finished meanwhile are checked as they are passed: waitAll() starts at firstLive_,
  // so an op passed unchecked (a failed one, or a short receive) would never be reported.
  while (firstLive_ < posted_ && resources_.op(firstLive_).finished()) {
    checkFailure(resources_.op(firstLive_));
    ++firstLive_;
  }
}

void Exec::waitWordSlow(const std::atomic<uint64_t>& word, uint64_t atLeast, int peer,
                        const char* what, void (*aside)(Exec&)) {
  // Loads of the word between two clock reads while spinning (~1 us at most).
  constexpr int kPolls = 64;
  common::WaitPolicy& waiting = this->waiting();
  // No spinning (the short spin is 0 exactly when the policy never spins): yield at once.
  const int polls = waiting.shortSpin().count() > 0 ? kPolls : 0;
  // The wait starts at the first clock read, after the first polls: a word that changes within
  // a few ns (the peer is mid-write) is seen without reading the clock (~20 ns here) at all.
  Clock::time_point start;
  Clock::time_point spinUntil;
  std::chrono::nanoseconds spin{0};  // asked of the policy at the first clock read
  bool timed = false;
  int idlePolls = 0;
  for (;;) {
    // The hot path: the word alone, with the clock read once per kPolls loads, so a change is
    // seen within a few ns and no bookkeeping runs while spinning.
    bool arrived = false;
    for (int i = 0; i < polls && !arrived; ++i) {
      arrived = word.load(std::memory_order_acquire) >= atLeast;
    }
    if (arrived || word.load(std::memory_order_acquire) >= atLeast) {
      if (timed) waiting.ended(Clock::now() - start, spin);
      return;
    }
    if (aside != nullptr) aside(*this);
    const auto now = Clock::now();
    if (!timed) {
      timed = true;
      start = now;
      spin = waiting.spinFor();
      spinUntil = std::min(start + spin, deadline_);
    }
    if (now < spinUntil) continue;
    transport_.progress();  // no messages in flight; it runs the transport's liveness checks
    idle(now, start, spin, idlePolls, peer, what);
  }
}

void Exec::idle(Clock::time_point now, Clock::time_point lastProgress,
                std::chrono::nanoseconds spin, int& idlePolls, int wordPeer,
                const char* wordWhat) {
  if (now >= deadline_) {
    throwTimeout(wordWhat == nullptr ? std::string()
                                     : where(wordPeer) + " to " + wordWhat + " (shared memory)");
  }
  if (settings_.abortFlag != nullptr && settings_.abortFlag->load(std::memory_order_acquire)) {
    throw Error(ErrorCode::kAborted,
                head() + ": aborted" +
                    (settings_.abortReason != nullptr ? ": " + *settings_.abortReason : ""));
  }
  if (settings_.monitor != nullptr && settings_.monitor->failed()) {
    settings_.monitor->raise(desc_);
  }
  const int dead = goneInvolved(wordPeer);
  if (dead >= 0 && goneSince_ == Clock::time_point{}) goneSince_ = now;
  if (dead >= 0 && now - goneSince_ >= transport::kGoneDrain) {
    if (settings_.monitor != nullptr && settings_.monitor->awaitVerdict(kVerdictGrace, true)) {
      settings_.monitor->raise(desc_);
    }
    throw Error(ErrorCode::kPeerFailure, head() + ": peer " + whereRank(dead) +
                                             " is gone (process exited or connection lost)");
  }
  if (now - lastProgress >= spin) waiting().pause(now - lastProgress, idlePolls);
}

int Exec::goneInvolved(int wordPeer) const {
  if (transport_.deadPeer() < 0) return -1;
  // A peer that finished its part and exited (the last collective before a clean exit) must not
  // fail this one: only a gone peer this collective still waits on counts. Ranks that wait on it
  // only through others learn of it from those (the collective watch) or at the deadline.
  if (wordPeer >= 0 && transport_.peerGone(toTransport(wordPeer))) return toTransport(wordPeer);
  for (size_t i = firstLive_; i < posted_; ++i) {
    const transport::Op& op = resources_.op(i);
    if (!op.finished() && transport_.peerGone(op.peer)) return op.peer;
  }
  return -1;
}

void Exec::throwAboutPeer(ErrorCode code, int peer, const std::string& what) const {
  throw Error(code, head() + ": " + where(peer) + " " + what);
}

void Exec::throwMismatch(int peer, uint64_t peerSeq, const CollectiveDesc& mine) const {
  // The beacons name both calls ("rank 0 called X but rank 2 called Y"); give them a moment.
  if (settings_.monitor != nullptr && settings_.monitor->awaitVerdict(kMismatchGrace, false)) {
    settings_.monitor->raise(mine);
  }
  const std::string what =
      peerSeq == mine.seq
          ? "called collective #" + std::to_string(peerSeq) +
                " with a different kind, size, dtype, op, root or algorithm"
          : "is in collective #" + std::to_string(peerSeq);
  const std::string seen = mine.seq == desc_.seq
                               ? "seen in shared memory"
                               : "seen in shared memory during " + desc_.describe();
  throw Error(ErrorCode::kMismatch, head(mine) + ": " + where(peer) + " " + what + " (" + seen +
                                        "): the ranks called different "
                                        "collectives or different sizes");
}

bool Exec::test(Handle handle) {
  Op& op = resources_.op(handle);
  if (!op.finished()) transport_.progress();
  if (op.finished()) checkFailure(op);
  return op.finished();
}

void Exec::waitAll() {
  for (Handle h = firstLive_; h < posted_; ++h) wait(h);
  firstLive_ = posted_;
}

void Exec::sendRecv(int sendPeer, uint64_t sendSlot, const void* sendBuf, size_t sendBytes,
                    int recvPeer, uint64_t recvSlot, void* recvBuf, size_t recvBytes) {
  const Handle r = irecv(recvPeer, recvSlot, recvBuf, recvBytes);
  const Handle s = isend(sendPeer, sendSlot, sendBuf, sendBytes);
  wait(r);
  wait(s);
}

bool Exec::cancelAll() {
  std::vector<Op*> pending;
  for (Handle h = firstLive_; h < posted_; ++h) {
    Op& op = resources_.op(h);
    if (op.state == OpState::kPending) pending.push_back(&op);
  }
  firstLive_ = posted_;
  return pending.empty() || transport_.cancel(pending);
}

std::string Exec::where(int peer) const { return where(peer, desc_); }

std::string Exec::where(int peer, const CollectiveDesc& desc) const {
  std::string s = whereRank(peer < 0 ? transport_.rank() : toTransport(peer));
  if (peer < 0) s += ": " + desc.describe();
  return s;
}

std::string Exec::head(const CollectiveDesc& desc) const {
  const int r = transport_.rank();
  const auto& peers = transport_.peers();
  const std::string host =
      static_cast<size_t>(r) < peers.size() ? peers[static_cast<size_t>(r)].host : "";
  return errorHead(r, host) + ": " + desc.describe();
}

std::string Exec::whereRank(int r) const {
  const auto& peers = transport_.peers();
  std::string s = "rank " + std::to_string(r);
  if (static_cast<size_t>(r) < peers.size() && !peers[static_cast<size_t>(r)].host.empty()) {
    s += " (" + peers[static_cast<size_t>(r)].host + ")";
  }
  return s;
}

void Exec::checkFailure(const Op& op) const {
  if (op.done() && op.kind == OpKind::kRecv && op.received != op.bytes) {
    // Only a peer in another collective (or a different size of this one) sends a different size.
    throw Error(ErrorCode::kMismatch, head() + ": received " + std::to_string(op.received) +
                                          " bytes from " + whereRank(op.peer) + " where " +
                                          std::to_string(op.bytes) + " were expected (message " +
                                          std::to_string(tag::msgOf(op.tag)) +
                                          "): the ranks called collectives of different sizes");
  }
  if (!op.failed()) return;
  const bool send = op.kind == OpKind::kSend;
  const ErrorCode code =
      transport_.peerGone(op.peer) ? ErrorCode::kPeerFailure : ErrorCode::kTransport;
  throw Error(code, head() + ": " + (send ? "send to " : "receive from ") + whereRank(op.peer) +
                        " of " + formatBytes(op.bytes) + " (message " +
                        std::to_string(tag::msgOf(op.tag)) + ") failed on " + transport_.name() +
                        ": " + op.error);
}

void Exec::throwTimeout(const std::string& waitingFor) const {
  std::string recvFrom, sendTo;
  const auto ranks = static_cast<size_t>(transport_.size());  // ops name transport ranks
  std::vector<bool> seenRecv(ranks), seenSend(ranks);
  for (Handle h = firstLive_; h < posted_; ++h) {
    const Op& op = resources_.op(h);
    if (op.finished()) continue;
    auto& seen = op.kind == OpKind::kRecv ? seenRecv : seenSend;
    auto& list = op.kind == OpKind::kRecv ? recvFrom : sendTo;
    if (seen[static_cast<size_t>(op.peer)]) continue;
    seen[static_cast<size_t>(op.peer)] = true;
    list += (list.empty() ? "" : ", ") + whereRank(op.peer);
  }
  const auto bound = desc_.timeout.count() > 0 ? desc_.timeout : settings_.timeout;
  std::string msg = head() + ": Timed out after " + std::to_string(bound.count()) + " ms";
  if (!recvFrom.empty()) msg += "; waiting for data from " + recvFrom;
  if (!sendTo.empty()) msg += "; sends not yet taken by " + sendTo;
  if (!waitingFor.empty()) msg += "; waiting for " + waitingFor;
  if (settings_.monitor != nullptr) msg += settings_.monitor->laggards(desc_);
  throw Error(ErrorCode::kTimeout, msg);
}

}  // namespace smddp::algo
