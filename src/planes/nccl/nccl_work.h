// SPDX-License-Identifier: Apache-2.0
// NcclWork: one call on the NCCL plane (a collective on the group's communicator, or a message on
// a pair's): the stream it runs on, the event recorded after it, how it ended. It settles once —
// done when its event completed, failed when the plane failed first (a timeout, a peer gone, a
// mismatch, NCCL's own error, an abort) — and then runs the completion its poster gave it. A
// message whose pair communicator is still being formed is held: its device work is enqueued by
// the plane once the communicator is ready (ready() false until then).
// Invariants: settled() turns true once; the completion runs once, after the outcome is final;
// end() is recorded before ready() turns true.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <string>

#include "algorithms/collective.h"
#include "planes/device_work.h"

namespace smddp::planes::nccl {

class NcclWork final : public DeviceWork {
 public:
  using Clock = std::chrono::steady_clock;
  using Completion = std::function<void(std::exception_ptr)>;

  // `start` and `end` are this work's own events (destroyed with it).
  NcclWork(device::Device& device, device::Stream stream, device::Event start, device::Event end,
           std::string what, Clock::time_point deadline, Completion completion);
  ~NcclWork() override;
  NcclWork(const NcclWork&) = delete;
  NcclWork& operator=(const NcclWork&) = delete;

  device::Device& device() const override { return device_; }
  device::Stream stream() const override { return stream_; }
  device::Event end() const override { return end_; }
  bool ready() const override { return ready_.load(std::memory_order_acquire); }
  bool awaitReady(Clock::time_point deadline) override;
  // Polls (backing off to 100 us): settles the work done once its end event completed while
  // the plane has not failed (the watchdog would, up to a poll later).
  bool awaitSettled(Clock::time_point deadline) override;

  // The message's pair (NcclPairs: sender * 65536 + receiver); -1 for a collective. Set by the
  // plane before the watchdog sees the work.
  int64_t pair = -1;
  // The plane's failure flag (set by the plane before it hands the work out): a work whose
  // kernel ended by an abort is not done.
  const std::atomic<bool>* planeFailed = nullptr;

  device::Event start() const { return start_; }
  const std::string& what() const { return what_; }  // "all_reduce #3 (...)" for messages
  Clock::time_point deadline() const { return deadline_; }
  bool settled() const { return settled_.load(std::memory_order_acquire); }
  // The outcome once settled (null: done).
  std::exception_ptr error() const;

  // The plane's: end() is recorded, the device work enqueued (or it never will be: failed).
  void markReady();
  // Settles with `error` (null: done) unless settled already; runs the completion. True when
  // this call settled it.
  bool settle(std::exception_ptr error);

 private:
  device::Device& device_;
  const device::Stream stream_;
  const device::Event start_;
  const device::Event end_;
  const std::string what_;
  const Clock::time_point deadline_;
  Completion completion_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> settled_{false};
  mutable std::mutex mutex_;  // guards error_ and the ready wait
  std::condition_variable readyCv_;
  std::exception_ptr error_;
};

}  // namespace smddp::planes::nccl
