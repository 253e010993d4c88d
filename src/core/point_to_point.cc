// SPDX-License-Identifier: Apache-2.0
// PointToPoint (point_to_point.h): posting, the sweep that finishes operations (completion, size
// check, deadline, dead peer), waiting by driving, and the progress thread.
#include "core/point_to_point.h"

#include <iterator>
#include <string>
#include <thread>
#include <utility>

#include "algorithms/arena/mailbox.h"
#include "common/clock.h"
#include "common/logging.h"
#include "smddp/error.h"
#include "smddp/helper_thread.h"

namespace smddp::core {
namespace {

using transport::OpKind;

}  // namespace

PointToPoint::PointToPoint(std::unique_ptr<transport::Transport> transport,
                           common::WaitPolicy& waiting, algo::arena::Segment* arena)
    : transport_(std::move(transport)), rank_(transport_->rank()), waiting_(waiting) {
  if (arena != nullptr && arena->mailPayload() > 0) {
    mailbox_ = std::make_unique<algo::arena::Mailbox>(*arena);
    queuedLetters_.assign(static_cast<size_t>(arena->size()), 0);
  }
  thread_ = startHelperThread("smddp-p2p", [this] { threadMain(); });
}

PointToPoint::~PointToPoint() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  thread_.join();
  abort();
}

std::string PointToPoint::where(int peer) const {
  if (peer == transport::kAnyPeer) return "any rank";
  std::string s = "rank " + std::to_string(peer);
  const auto& peers = transport_->peers();
  if (static_cast<size_t>(peer) < peers.size() && !peers[static_cast<size_t>(peer)].host.empty()) {
    s += " (" + peers[static_cast<size_t>(peer)].host + ")";
  }
  return s;
}

Request PointToPoint::post(const algo::CollectiveArgs& args, int peer, uint32_t tag,
                           std::chrono::milliseconds timeout, std::shared_ptr<StagedCall> staged,
                           int fabricDevice) {
  auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
  state->staged = std::move(staged);
  state->args = args;
  state->desc.call() = args.call();
  state->desc.timeout = timeout;
  state->p2p = this;
  const bool send = args.kind == CollectiveKind::kSend;
  FinishedList finished;
  bool wake = false;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    state->desc.seq = nextSeq_++;
    if (aborted_.load()) {
      throw Error(ErrorCode::kAborted, errorHead(rank_, hostName()) + ": " +
                                           state->desc.describe() +
                                           " not posted: the communicator was aborted");
    }
    Pending local;
    local.op.kind = send ? OpKind::kSend : OpKind::kRecv;
    local.op.peer = peer;
    local.op.tag = tag;
    local.op.buffer = send ? const_cast<void*>(args.send) : args.recv;
    local.op.bytes = args.bytes();
    if (fabricDevice >= 0) {  // under mutex_: the transport has one driver at a time
      if (mailbox_) {  // the fabric path is for peers on other hosts; a mailbox means one host
        throw Error(ErrorCode::kInternal,
                    "smddp: a CUDA message for the fabric on a one-host group");
      }
      local.op.desc = transport_->registerDevice(local.op.buffer, local.op.bytes, fabricDevice);
    }
    local.request = state;
    local.timeout = timeout;
    local.deadline = coarseNow() + timeout + coarseLag();  // never early; no clock read
    local.tag = tag;
    // The latency path: a letter written at once, or a whole unexpected message taken, completes
    // here without entering the list.
    if (mailbox_ && fabricDevice < 0 && (send ? sendNow(local) : takeNow(local))) {
      const std::exception_ptr error = received(local);
      lock.unlock();
      state->complete(error);
      return Request(state);
    }
    Pending& p = inflight_.emplace_back(std::move(local));
    if (mailbox_) {
      send ? postLetterSend(p) : postLetterRecv(p);
    } else {
      try {
        transport_->post(p.op);
      } catch (...) {
        inflight_.pop_back();
        throw;
      }
    }
    driveLocked(finished, coarseNow());  // an operation that failed at once is reported now
    wake = threadAsleep_;
  }
  if (wake) work_.notify_one();  // else the thread looks by itself soon: no system call
  completeAll(finished);
  return Request(state);
}

bool PointToPoint::driveLocked(FinishedList& out, Clock::time_point now) {
  if (inflight_.empty() && !mailbox_) return false;
  bool moved = false;
  if (mailbox_) {
    moved = readLetters();
    if (queuedTotal_ > 0) moved = pushLetters() || moved;
  }
  // With mailboxes the transport carries only large messages; it is still polled every
  // millisecond, which is also when it looks whether the peers are alive.
  if (!mailbox_ || fabricBusy_ || now - lastPoll_ >= std::chrono::milliseconds(1)) {
    transport_->progress();
    lastPoll_ = now;
  }
  const size_t before = out.size();
  fabricBusy_ = false;
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    Pending& p = *it;
    if (p.request == nullptr) {  // one the transport could not withdraw (below), reported
      it = p.op.finished() ? inflight_.erase(it) : std::next(it);
      continue;
    }
    // A peer found gone may have sent this message just before it exited: keep polling for
    // transport::kGoneDrain before failing the operation.
    bool gone = false;
    if (!p.op.finished() && transport_->peerGone(p.op.peer)) {
      if (p.goneSince == Clock::time_point{}) p.goneSince = Clock::now();  // `now` may lag
      gone = now - p.goneSince >= transport::kGoneDrain;
    }
    const bool expired = !p.op.finished() && now >= p.deadline;
    if (!p.op.finished() && !gone && !expired) {
      fabricBusy_ = fabricBusy_ || p.path == Path::kFabric;
      ++it;
      continue;
    }
    if (!p.op.finished() && !withdraw(p)) {
      // The transport could not withdraw it and may still write the buffer: keep the Pending
      // (its Op stays valid) and refuse everything from now on.
      aborted_.store(true);
      out.push_back({p.request, failure(p, gone ? Why::kGone : Why::kExpired)});
      p.keepBuffer = p.request->staged;
      p.request = nullptr;
      p.deadline = Clock::time_point::max();
      ++it;
      continue;
    }
    std::exception_ptr error;
    if (p.op.done()) {
      error = received(p);
    } else if (gone) {
      error = failure(p, Why::kGone);
    } else if (expired &&
               (p.path != Path::kFabric || p.op.error.find("cancelled") != std::string::npos)) {
      error = failure(p, Why::kExpired);
    } else {
      error = failure(p, Why::kFailed);
    }
    out.push_back({std::move(p.request), error});
    it = inflight_.erase(it);
  }
  return moved || out.size() > before;
}

bool PointToPoint::withdraw(Pending& p) {
  switch (p.path) {
    case Path::kFabric:
      return transport_->cancel(p.op);
    case Path::kLetterOut:
      --queuedLetters_[static_cast<size_t>(p.op.peer)];
      --queuedTotal_;
      return true;
    case Path::kLetterIn:
      return true;
  }
  return true;
}

std::exception_ptr PointToPoint::received(const Pending& p) const {
  if (p.op.kind == OpKind::kSend) return nullptr;
  const int sender = p.op.source;
  p.request->source = sender;
  if (p.op.received == p.op.bytes) return nullptr;
  return std::make_exception_ptr(Error(
      ErrorCode::kMismatch, prefix(p) + ": " + where(sender) + " sent " +
                                std::to_string(p.op.received) +
                                " bytes where this receive expects " + std::to_string(p.op.bytes) +
                                ": the send and the recv differ in size"));
}

std::exception_ptr PointToPoint::failure(const Pending& p, Why why) const {
  const bool send = p.op.kind == OpKind::kSend;
  const std::string peer = where(p.op.peer);
  std::string what;
  ErrorCode code = ErrorCode::kTransport;
  if (why == Why::kGone || (why == Why::kFailed && transport_->peerGone(p.op.peer))) {
    code = ErrorCode::kPeerFailure;
    what = "peer " + peer + " is gone (process exited or connection lost)";
  } else if (why == Why::kExpired) {
    code = ErrorCode::kTimeout;
    what = "Timed out after " + std::to_string(p.timeout.count()) + " ms: " +
           (p.path == Path::kLetterOut
                ? peer + " took none of this rank's last messages (its mailbox is full): it " +
                      "posted no matching recv"
            : send ? peer + " posted no matching recv (this tag, from this rank)"
                   : peer + " sent no matching message (this tag, to this rank)");
  } else if (p.op.error.find("truncated") != std::string::npos) {
    code = ErrorCode::kMismatch;
    what = "the message from " + peer + " is larger than this receive (" +
           std::to_string(p.op.bytes) + " bytes): the send and the recv differ in size";
  } else {
    what = "failed on " + transport_->name() + ": " + p.op.error;
  }
  return std::make_exception_ptr(Error(code, prefix(p) + ": " + what));
}

// "smddp: rank 0 (host): recv #3 (float32 x 10 = 40 B) from rank 1 (host), tag 7"
std::string PointToPoint::prefix(const Pending& p) const {
  const bool send = p.op.kind == OpKind::kSend;
  return errorHead(rank_, hostName()) + ": " + p.request->desc.describe() +
         (send ? " to " : " from ") + where(p.op.peer) + ", tag " + std::to_string(p.tag);
}

void PointToPoint::completeAll(FinishedList& finished) {
  for (Finished& f : finished) {
    if (f.request) f.request->complete(f.error);
  }
  finished.clear();
}

bool PointToPoint::waitUntil(RequestState& request, Clock::time_point deadline) {
  FinishedList finished;
  auto idleSince = Clock::now();
  // Asked of the policy at an idle stretch's first idle poll (as Exec::wait does).
  constexpr std::chrono::nanoseconds kNotIdle{-1};
  auto spin = kNotIdle;
  int idlePolls = 0;
  waiters_.fetch_add(1, std::memory_order_relaxed);
  struct Leave {
    std::atomic<int>& n;
    ~Leave() { n.fetch_sub(1, std::memory_order_relaxed); }
  } leave{waiters_};
  while (!request.done()) {
    const auto now = Clock::now();
    bool progressed = false;
    {
      std::unique_lock<std::mutex> lock(mutex_, std::try_to_lock);
      if (lock.owns_lock()) progressed = driveLocked(finished, now);
    }
    completeAll(finished);
    if (request.done()) {
      if (spin != kNotIdle) waiting_.ended(Clock::now() - idleSince, spin);
      break;
    }
    if (now >= deadline) return false;
    if (progressed) {
      if (spin != kNotIdle) waiting_.ended(now - idleSince, spin);
      idleSince = now;
      idlePolls = 0;
      spin = kNotIdle;
      continue;
    }
    if (spin == kNotIdle) spin = waiting_.spinFor();
    // Past 2 ms a send or recv sleeps on every pause: a pipeline stage often waits long for the
    // next one, and a yielding waiter keeps an otherwise idle core busy.
    if (now - idleSince >= spin) {
      waiting_.pause(now - idleSince, idlePolls, {std::chrono::milliseconds(2), 1});
    }
  }
  return true;
}

void PointToPoint::abort() {
  FinishedList finished;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_.store(true);
    for (auto it = inflight_.begin(); it != inflight_.end();) {
      Pending& p = *it;
      const bool withdrawn = p.op.finished() || withdraw(p);
      if (p.request) {
        // Before the request moves out. One that completed meanwhile keeps its outcome.
        std::exception_ptr error = p.op.done() ? received(p) : aborted(p);
        finished.push_back({std::move(p.request), error});
      }
      // One the transport could not withdraw stays (it may still write the buffer).
      it = withdrawn ? inflight_.erase(it) : std::next(it);
    }
  }
  completeAll(finished);
}

std::exception_ptr PointToPoint::aborted(const Pending& p) const {
  return std::make_exception_ptr(
      Error(ErrorCode::kAborted, prefix(p) + ": aborted before it completed"));
}

// Polls while anything is in flight, backing off from 50 us to 1 ms while nothing finishes (a
// waiter drives every operation in flight, so the thread stands by while one waits). With nothing
// in flight it looks every millisecond for a while, so that a busy sender or receiver never pays
// for waking it (a system call, and a thread scheduled onto a core another rank spins on), and
// sleeps until woken once nothing was posted for kNap; with mailboxes it wakes every kMailNap
// to read them, so that a sender never waits long on a rank that posts no receive.
void PointToPoint::threadMain() {
  constexpr auto kMinSleep = std::chrono::microseconds(50);
  constexpr auto kMaxSleep = std::chrono::microseconds(1000);
  constexpr auto kNap = std::chrono::milliseconds(200);
  constexpr auto kMailNap = std::chrono::milliseconds(10);
  auto sleep = kMinSleep;
  auto idleSince = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  // driveLocked, with its outcome (what finished) to complete once the lock is released.
  const auto drive = [this](FinishedList* finished = nullptr) {
    FinishedList none;
    try {
      return driveLocked(finished != nullptr ? *finished : none, Clock::now());
    } catch (const std::exception& e) {
      SMDDP_WARN(rank_, "point-to-point progress: " << e.what());
      return false;
    }
  };
  while (!stopping_) {
    if (inflight_.empty()) {
      if (mailbox_ && drive()) idleSince = Clock::now();  // letters came: unexpected messages
      if (Clock::now() - idleSince < kNap) {
        work_.wait_for(lock, kMaxSleep);
        continue;
      }
      threadAsleep_ = true;
      const auto ready = [this] { return stopping_ || !inflight_.empty(); };
      if (mailbox_) {
        work_.wait_for(lock, kMailNap, ready);  // senders wait for room in its mailboxes
      } else {
        work_.wait(lock, ready);
      }
      threadAsleep_ = false;
      if (!inflight_.empty()) {
        sleep = kMinSleep;
        idleSince = Clock::now();
      }
      continue;
    }
    idleSince = Clock::now();
    if (waiters_.load(std::memory_order_relaxed) > 0) {  // a waiter drives everything in flight
      work_.wait_for(lock, kMaxSleep);
      continue;
    }
    FinishedList finished;
    const bool any = drive(&finished);
    lock.unlock();
    completeAll(finished);
    sleep = any ? kMinSleep : std::min(sleep * 2, kMaxSleep);
    std::this_thread::sleep_for(sleep);
    lock.lock();
  }
}

}  // namespace smddp::core
