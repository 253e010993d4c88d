// SPDX-License-Identifier: Apache-2.0
// The fake device's streams and events (fake_stream.h).
#include "device/fake/fake_stream.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include "smddp/error.h"

namespace smddp::device::fake {
namespace {

using Clock = std::chrono::steady_clock;

[[noreturn]] void failSys(const std::string& call) {
  throw Error(ErrorCode::kInternal, "smddp: fake device: " + call + ": " + std::strerror(errno));
}

}  // namespace

bool waitUntil(const std::function<bool()>& pred, const char* what) {
  const auto deadline = Clock::now() + kTaskWaitBound;
  for (int spins = 0; !pred(); ++spins) {
    if (spins < 64) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if ((spins & 1023) == 1023 && Clock::now() > deadline) {
      std::fprintf(stderr, "smddp: fake device: a stream gave up waiting for %s after %lld s\n",
                   what, static_cast<long long>(kTaskWaitBound.count()));
      return false;
    }
  }
  return true;
}

FakeStream::FakeStream(int ordinal, int64_t delayUs, uint64_t seed)
    : ordinal_(ordinal), delayUs_(delayUs), rng_(seed), worker_([this] { run(); }) {}

FakeStream::~FakeStream() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  ready_.notify_one();
  worker_.join();
}

void FakeStream::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  ready_.notify_one();
}

bool FakeStream::idle() {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_.empty() && !running_;
}

void FakeStream::run() {
  std::uniform_int_distribution<int64_t> delay(0, delayUs_);
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    ready_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and everything queued ran
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    running_ = true;
    const int64_t us = delayUs_ > 0 ? delay(rng_) : 0;
    lock.unlock();
    if (us > 0) std::this_thread::sleep_for(std::chrono::microseconds(us));
    try {
      task();
    } catch (const std::exception& e) {  // a stream has nobody to throw to
      std::fprintf(stderr, "smddp: fake device: a stream task failed: %s\n", e.what());
    }
    lock.lock();
    running_ = false;
  }
}

FakeEvent::FakeEvent(int ordinal) : ordinal_(ordinal) {
  fd_ = memfd_create("smddp-fake-event", MFD_CLOEXEC);
  if (fd_ < 0) failSys("memfd_create");
  if (ftruncate(fd_, static_cast<off_t>(sizeof(EventTickets))) != 0) {
    close(fd_);
    failSys("ftruncate");
  }
  void* p = mmap(nullptr, sizeof(EventTickets), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    close(fd_);
    failSys("mmap");
  }
  tickets_ = new (p) EventTickets();
}

FakeEvent::FakeEvent(int pid, int fd) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  fd_ = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd_ < 0) failSys("open " + path);
  void* p = mmap(nullptr, sizeof(EventTickets), PROT_READ | PROT_WRITE, MAP_SHARED, fd_, 0);
  if (p == MAP_FAILED) {
    close(fd_);
    failSys("mmap " + path);
  }
  tickets_ = static_cast<EventTickets*>(p);  // constructed by the exporting process
}

FakeEvent::~FakeEvent() {
  munmap(tickets_, sizeof(EventTickets));
  close(fd_);
}

}  // namespace smddp::device::fake
