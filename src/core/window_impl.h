// SPDX-License-Identifier: Apache-2.0
// WindowImpl: the machinery of smddp::Window (include/smddp/window.h).
//
// Creation (collective, Communicator::createWindow): every rank publishes its window's size, where
// it lies in the shareable pool (algo::arena::PoolRef; none for ordinary memory) and the pool
// block of its signal counters (one cache line per rank: how many signals that rank sent it);
// each maps the windows and counters of the peers on its host that have both, then all publish
// which peers they mapped, so both ends of a pair agree on its path:
//   mapped   the origin copies into the target's window and bumps the target's counter for it
//            (a release increment, after the copies); waitSignal acquires the counter.
//   message  a put is a header (put, offset, bytes) and the bytes, a signal a header (signal),
//            sent to the target with the window's tag over point-to-point (the origin's copy of
//            the bytes, so a put is done at once); waitSignal receives the peer's headers in
//            order, each put's bytes into the window, until a signal. Messages of one pair and
//            tag arrive in order, so the bytes before a signal are in place when it is taken.
// Puts and signals by message are done at once (the origin's copy is sent); one that fails makes
// the window's next call fail, naming it. A waitSignal's receives expire at its own deadline; one that failed (timeout, gone peer) leaves
// the pair's order unknown, so the window is then unusable, and says so. Buffers of messages in
// flight (a put's copy, the headers) belong to the window until their operation completed; those
// of a failed operation stay with it to its end (the transport may not have let go of them).
// The signal counters are never handed back to the pool: a slow peer may still bump them after
// this rank dropped the window (64 B per rank and window).
// Window calls are refused during a time estimate (they would be costed, not run).
// Window numbers go into the tags modulo 65536: a window stays distinct from the 65535 created
// after it.
// Invariants: a put's range is checked before anything moves; the counters only grow; both ends
// of a pair take the same path (the mapped bits every rank published).
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "algorithms/arena/pool.h"
#include "smddp/communicator.h"
#include "smddp/request.h"

namespace smddp::core {

class CommunicatorImpl;

class WindowImpl {
 public:
  // Tags of window messages: kTagBase | (id & 0xffff).
  static constexpr uint32_t kTagBase = Communicator::kWindowTags;

  // Collective over `comm`. data may be null when bytes is 0.
  static std::unique_ptr<WindowImpl> create(Communicator& comm, CommunicatorImpl& impl, int id,
                                            void* data, size_t bytes);
  ~WindowImpl();

  int id() const { return id_; }
  size_t bytes(int rank) const;
  void* data() const { return data_; }
  void* mapped(int rank) const;
  Request put(const void* src, size_t bytes, int dst, size_t offset);
  Request signal(int peer);
  void waitSignal(int peer, std::chrono::milliseconds timeout);

 private:
  struct Peer {
    size_t bytes = 0;
    algo::arena::PoolRef data;
    algo::arena::PoolRef flags;
    unsigned char* memory = nullptr;          // its window, mapped (mapped path)
    std::atomic<uint64_t>* counter = nullptr;  // its counter of my signals (mapped path)
    bool mapped = false;                       // I put into its window directly
    bool mapsMe = false;                       // it puts into my window directly
    std::unique_ptr<unsigned char[]> header;   // its next header lands here (message path)
    uint64_t taken = 0;                        // its signals consumed here
  };
  WindowImpl(Communicator& comm, CommunicatorImpl& impl, int id, void* data, size_t bytes);
  std::string where() const;  // "smddp: rank R: window N"
  void checkNotEstimating(const char* what) const;
  void markBroken(const std::string& why);
  // Keeps a message's buffer until its request completed well (failed: to the window's end).
  void hold(Request& request, std::shared_ptr<void> buffer);
  int checkPeer(int peer, const char* what) const;
  void checkUsable();  // also surfaces a failed message sent earlier
  Request message(int peer, uint32_t kind, uint64_t offset, const void* src, size_t bytes);
  std::atomic<uint64_t>* myCounter(int peer) const;
  void waitMapped(int peer, std::chrono::steady_clock::time_point deadline);
  void waitMessages(int peer, std::chrono::steady_clock::time_point deadline);

  Communicator& comm_;
  CommunicatorImpl& impl_;
  int id_;
  int rank_;
  int size_;
  void* data_;
  std::shared_ptr<algo::arena::Pool> pool_;
  void* flags_ = nullptr;  // this rank's counters (n cache lines, in the pool; never freed)
  std::shared_ptr<std::atomic<uint64_t>> registered_;  // the communicator's window bytes
  std::vector<Peer> peers_;
  std::atomic<bool> broken_{false};
  mutable std::mutex mutex_;  // brokenWhy_, held_; a put's header and bytes go out back to back
  std::string brokenWhy_;
  struct Held {
    Request request;
    std::shared_ptr<void> buffer;
  };
  std::vector<Held> held_;
};

}  // namespace smddp::core
