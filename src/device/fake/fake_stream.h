// SPDX-License-Identifier: Apache-2.0
// The fake device's streams and events. A stream is a worker thread running its tasks in issue
// order, each after a random delay of 0..delayUs (0: none), so work that is not ordered by a
// stream or an event finishes in a random order. An event is a pair of tickets in a page of shared
// memory (so another process can open it): record() takes the next ticket and enqueues "completed
// = ticket"; a wait captures the ticket current when it is enqueued, as CUDA captures the last
// record.
// Invariants: a stream's destructor runs what is queued, then joins; a task that waits (an event,
// a flag) gives up after kTaskWaitBound with a message on stderr rather than hang a test.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <random>
#include <thread>

#include "device/device.h"

namespace smddp::device::fake {

// Beyond any collective's timeout (a communicator fails its call first and releases the wait).
constexpr std::chrono::seconds kTaskWaitBound{3600};

// Polls pred (yielding, then sleeping) until it holds or kTaskWaitBound passes; false then, after
// naming `what` on stderr.
bool waitUntil(const std::function<bool()>& pred, const char* what);

class FakeStream {
 public:
  FakeStream(int ordinal, int64_t delayUs, uint64_t seed);
  ~FakeStream();
  FakeStream(const FakeStream&) = delete;
  FakeStream& operator=(const FakeStream&) = delete;

  int ordinal() const { return ordinal_; }
  void enqueue(std::function<void()> task);
  // Nothing queued and nothing running.
  bool idle();

 private:
  void run();

  const int ordinal_;
  const int64_t delayUs_;
  std::mt19937_64 rng_;
  std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<std::function<void()>> tasks_;
  bool running_ = false;  // a task is off the queue and not finished
  bool stopping_ = false;
  std::thread worker_;
};

struct EventTickets {
  std::atomic<uint64_t> recorded{0};
  std::atomic<uint64_t> completed{0};
};

class FakeEvent {
 public:
  explicit FakeEvent(int ordinal);  // a fresh event in its own shared page
  FakeEvent(int pid, int fd);       // another process's event (IPC)
  ~FakeEvent();
  FakeEvent(const FakeEvent&) = delete;
  FakeEvent& operator=(const FakeEvent&) = delete;

  EventTickets& tickets() { return *tickets_; }
  // Stream tasks of this process still waiting on it (it is not deleted before they ran).
  std::atomic<int> waiters{0};
  int fd() const { return fd_; }
  int ordinal() const { return ordinal_; }

 private:
  EventTickets* tickets_ = nullptr;
  int fd_ = -1;
  int ordinal_ = 0;
};

}  // namespace smddp::device::fake
