// SPDX-License-Identifier: Apache-2.0
// NcclWork (nccl_work.h).
#include "planes/nccl/nccl_work.h"

#include <algorithm>
#include <thread>
#include <utility>

namespace smddp::planes::nccl {

NcclWork::NcclWork(device::Device& device, device::Stream stream, device::Event start,
                   device::Event end, std::string what, Clock::time_point deadline,
                   Completion completion)
    : device_(device),
      stream_(stream),
      start_(start),
      end_(end),
      what_(std::move(what)),
      deadline_(deadline),
      completion_(std::move(completion)) {}

NcclWork::~NcclWork() {
  device_.destroyEvent(start_);
  device_.destroyEvent(end_);
}

bool NcclWork::awaitReady(Clock::time_point deadline) {
  if (ready()) return true;
  std::unique_lock<std::mutex> lock(mutex_);
  return readyCv_.wait_until(lock, deadline, [this] { return ready(); });
}

bool NcclWork::awaitSettled(Clock::time_point deadline) {
  auto step = std::chrono::microseconds(1);
  while (!settled()) {
    if (ready() && planeFailed != nullptr && !planeFailed->load(std::memory_order_acquire) &&
        device_.done(end_)) {
      settle(nullptr);
      break;
    }
    if (Clock::now() > deadline) return settled();
    std::this_thread::sleep_for(step);
    step = std::min(step * 2, std::chrono::microseconds(100));
  }
  return true;
}

void NcclWork::markReady() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ready_.store(true, std::memory_order_release);
  }
  readyCv_.notify_all();
}

std::exception_ptr NcclWork::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

bool NcclWork::settle(std::exception_ptr error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (settled_.load(std::memory_order_relaxed)) return false;
    error_ = error;
    settled_.store(true, std::memory_order_release);
  }
  if (completion_) {
    Completion fn = std::move(completion_);
    fn(std::move(error));
  }
  return true;
}

}  // namespace smddp::planes::nccl
