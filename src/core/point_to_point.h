// SPDX-License-Identifier: Apache-2.0
// PointToPoint: a communicator's send and recv. They are not collectives: only the two ranks of
// a message take part, so they cannot run in the engine's issue order (a rank's send would wait
// behind a collective its peer only enters after receiving). They have a transport of their own
// (a second endpoint, its own tag space), posted at once from the caller's thread and driven by
// whoever waits, plus a progress thread while anything is in flight (a sender's large message
// may need its progress although nobody on that rank waits).
//
// Tags are the user's (32 bits); a receive names its peer or takes any rank's message with its
// tag, and learns the sender from the transport. Messages between one pair with one tag match in
// the order they were posted (the transports keep per-peer order).
// Invariants: every operation is bounded by the timeout it was posted with; a peer found gone
// fails the operations that involve it (kPeerFailure); a message of another size than the
// receive fails it (kMismatch when shorter, the transport's truncation error when longer);
// requests complete outside the lock, so their callbacks may post more.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/request_state.h"
#include "smddp/request.h"
#include "smddp/types.h"
#include "transport/transport.h"

namespace smddp::core {

class PointToPoint {
 public:
  using Clock = std::chrono::steady_clock;

  // spin: how long a waiter polls before it yields (the host's spin budget, SMDDP_SPIN_US).
  PointToPoint(std::unique_ptr<transport::Transport> transport, std::chrono::microseconds spin);
  // Fails what is still in flight (kAborted) and stops the progress thread.
  ~PointToPoint();
  PointToPoint(const PointToPoint&) = delete;
  PointToPoint& operator=(const PointToPoint&) = delete;

  // Posts a send or a receive (peer transport::kAnyPeer: from any rank) of `args` (kind kSend or
  // kRecv, checked by the caller) bounded by `timeout`; fails at once with kAborted after abort().
  Request post(const algo::CollectiveArgs& args, int peer, uint32_t tag,
               std::chrono::milliseconds timeout);
  // Drives progress until `request` is done or `deadline` passes; returns request.done().
  bool waitUntil(RequestState& request, Clock::time_point deadline);
  // Fails everything in flight and every later post with kAborted.
  void abort();

 private:
  struct Pending {
    transport::Op op;
    std::shared_ptr<RequestState> request;
    Clock::time_point deadline;
    std::chrono::milliseconds timeout;
    uint32_t tag;
  };
  struct Finished {
    std::shared_ptr<RequestState> request;
    std::exception_ptr error;
  };

  enum class Why { kGone, kExpired, kFailed };

  // One round of progress and the sweep of what finished (mutex_ held); whatever finished is
  // moved to `out`, to be completed once the lock is released. Returns whether anything did.
  bool driveLocked(std::vector<Finished>& out);
  // The outcome of a done operation: null, or kMismatch for a receive of another size (sets the
  // request's source).
  std::exception_ptr received(const Pending& p) const;
  // The error of an operation that did not complete.
  std::exception_ptr failure(const Pending& p, Why why) const;
  std::exception_ptr aborted(const Pending& p) const;
  // "smddp: rank R (host): recv #3 (float32 x 10 = 40 B) from rank 1 (host), tag 7".
  std::string prefix(const Pending& p) const;
  std::string where(int peer) const;  // "rank 1 (host)", "any rank"
  static void completeAll(std::vector<Finished>& finished);
  void threadMain();

  std::unique_ptr<transport::Transport> transport_;
  const int rank_;
  std::mutex mutex_;  // guards transport_ (one driver at a time), inflight_ and nextSeq_
  std::condition_variable work_;
  std::list<Pending> inflight_;  // stable addresses: the transport holds &Pending::op
  uint64_t nextSeq_ = 0;
  std::atomic<bool> aborted_{false};
  const std::chrono::microseconds spin_;
  bool stopping_ = false;
  // The thread sleeps on work_ without a bound (nothing posted for a while): a post wakes it.
  // Otherwise it looks again within a millisecond by itself, and posts make no system call.
  bool threadAsleep_ = false;
  std::atomic<int> waiters_{0};  // threads inside waitUntil (they drive; the thread need not)
  std::thread thread_;
};

}  // namespace smddp::core
