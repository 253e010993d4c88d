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
//
// Within a host (the communicator has an arena with mailboxes: algorithms/arena/mailbox.h) every
// message is announced by a letter in the receiver's mailbox, in post order per ordered pair, and
// matched here against the posted receives (the first that fits, in post order) or kept as
// unexpected; a message that fits a letter travels in it (a send is done once it is written),
// a larger one follows through the transport, tagged with the letter's carry number (unique per
// pair, so a receive that timed out can never take a later message's data). A send whose
// receiver's mailbox is full waits here in post order; the receiver drains its mailboxes whenever
// it drives, and its progress thread at least every 10 ms.
// Invariants: every operation is bounded by the timeout it was posted with; a peer found gone
// fails the operations that involve it (kPeerFailure); a message of another size than the
// receive fails it (kMismatch when shorter, the transport's truncation error when longer);
// requests complete outside the lock, so their callbacks may post more.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/recycling_allocator.h"
#include "common/wait_policy.h"
#include "core/request_state.h"
#include "smddp/request.h"
#include "smddp/types.h"
#include "transport/transport.h"

namespace smddp::algo::arena {
class Mailbox;
class Segment;
}  // namespace smddp::algo::arena

namespace smddp::core {

class PointToPoint {
 public:
  using Clock = std::chrono::steady_clock;

  // waiting: the communicator's policy (how long a waiter polls before it yields); outlives this.
  // arena (optional, outliving this): the communicator's arena, whose mailboxes then carry the
  // messages (none when it has no room for letters).
  PointToPoint(std::unique_ptr<transport::Transport> transport, common::WaitPolicy& waiting,
               algo::arena::Segment* arena = nullptr);
  // Fails what is still in flight (kAborted) and stops the progress thread.
  ~PointToPoint();
  PointToPoint(const PointToPoint&) = delete;
  PointToPoint& operator=(const PointToPoint&) = delete;

  // Posts a send or a receive (peer transport::kAnyPeer: from any rank) of `args` (kind kSend or
  // kRecv, checked by the caller) bounded by `timeout`; fails at once with kAborted after abort().
  // `staged`: the device side of a message on CUDA memory (planes/smddp/stager.h); the request
  // keeps it. fabricDevice >= 0: args' buffer is CUDA memory of that device, registered with the
  // transport (capabilities().takesDeviceMemory) and handed to it as is.
  Request post(const algo::CollectiveArgs& args, int peer, uint32_t tag,
               std::chrono::milliseconds timeout, std::shared_ptr<StagedCall> staged = nullptr,
               int fabricDevice = -1);
  // The transport moves CUDA memory itself (FI_HMEM).
  bool takesDeviceMemory() const { return transport_->capabilities().takesDeviceMemory; }
  // Messages from outside the group its transport dropped (any thread may ask).
  uint64_t foreignMessagesDropped() const { return transport_->foreignMessagesDropped(); }
  // Drives progress until `request` is done or `deadline` passes; returns request.done().
  bool waitUntil(RequestState& request, Clock::time_point deadline);
  // Fails everything in flight and every later post with kAborted.
  void abort();

 private:
  // How an operation travels: posted on the transport, or (with mailboxes) a send whose letter is
  // not written yet or a receive that no letter matched yet.
  enum class Path : uint8_t { kFabric, kLetterOut, kLetterIn };
  struct Pending {
    transport::Op op;
    Path path = Path::kFabric;
    std::shared_ptr<RequestState> request;
    // Set when request is dropped while the transport may still write op.buffer: the staged
    // pinned block (CUDA messages) that buffer lies in, kept until the op finishes.
    std::shared_ptr<void> keepBuffer;
    Clock::time_point deadline;
    Clock::time_point goneSince{};  // when its peer was first seen gone (transport::kGoneDrain)
    std::chrono::milliseconds timeout;
    uint32_t tag;
  };
  struct Finished {
    std::shared_ptr<RequestState> request;
    std::exception_ptr error;
  };
  // Per-call lists and the in-flight list take their blocks from per-thread free lists: no
  // malloc on the latency path (recycling_allocator.h).
  using FinishedList = std::vector<Finished, RecyclingAllocator<Finished>>;

  // A letter read before any receive matched it: the message (whole) or its carry number.
  struct Unexpected {
    int from;
    uint32_t tag;
    uint32_t carry;
    uint64_t bytes;
    std::vector<unsigned char> data;
  };

  enum class Why { kGone, kExpired, kFailed };

  // One round of progress and the sweep of what finished (mutex_ held); whatever finished is
  // moved to `out`, to be completed once the lock is released. Returns whether anything did.
  bool driveLocked(FinishedList& out, Clock::time_point now);
  // The outcome of a done operation: null, or kMismatch for a receive of another size (sets the
  // request's source).
  std::exception_ptr received(const Pending& p) const;
  // The error of an operation that did not complete.
  std::exception_ptr failure(const Pending& p, Why why) const;
  std::exception_ptr aborted(const Pending& p) const;
  // "smddp: rank R (host): recv #3 (float32 x 10 = 40 B) from rank 1 (host), tag 7".
  std::string prefix(const Pending& p) const;
  std::string where(int peer) const;  // "rank 1 (host)", "any rank"
  static void completeAll(FinishedList& finished);
  void threadMain();
  // Withdraws an operation that did not finish; false when the transport could not.
  bool withdraw(Pending& p);

  // The mailbox path (point_to_point_mail.cc), mutex_ held.
  bool sendNow(Pending& p);         // a send whose whole letter could be written at once (done)
  bool takeNow(Pending& p);         // a receive that took a whole unexpected message (done)
  void postLetterSend(Pending& p);  // writes its letter, or queues it behind earlier ones
  void postLetterRecv(Pending& p);  // takes an unexpected message, or waits for a letter
  bool writeLetter(Pending& p);     // false: the receiver's mailbox is full
  bool pushLetters();               // queued letters, in post order; returns whether any went
  bool readLetters();               // every mailbox; returns whether any letter was read
  // A receive matched to a letter from `from` (data: a whole message; null when carried).
  void deliver(Pending& p, int from, uint32_t carry, uint64_t bytes, const unsigned char* data);
  // Posts the transport half of a carried message (tag: its carry number).
  void postCarried(Pending& p, int peer, uint32_t carry);

  std::unique_ptr<transport::Transport> transport_;
  const int rank_;
  std::mutex mutex_;  // guards transport_ (one driver at a time), inflight_ and nextSeq_
  std::condition_variable work_;
  // Stable addresses: the transport holds &Pending::op.
  std::list<Pending, RecyclingAllocator<Pending>> inflight_;
  uint64_t nextSeq_ = 0;
  std::atomic<bool> aborted_{false};
  common::WaitPolicy& waiting_;  // the communicator's: how waits spin, yield and sleep
  bool stopping_ = false;
  // The thread sleeps on work_ without a bound (nothing posted for a while): a post wakes it.
  // Otherwise it looks again within a millisecond by itself, and posts make no system call.
  bool threadAsleep_ = false;
  std::atomic<int> waiters_{0};  // threads inside waitUntil (they drive; the thread need not)
  // The mailbox path (null without one) and its state, guarded by mutex_.
  std::unique_ptr<algo::arena::Mailbox> mailbox_;
  std::deque<Unexpected> unexpected_;
  std::vector<int> queuedLetters_;  // per receiver: sends waiting for room in its mailbox
  int queuedTotal_ = 0;
  bool fabricBusy_ = true;  // something may be in flight on the transport
  Clock::time_point lastPoll_{};
  std::thread thread_;
};

}  // namespace smddp::core
