// SPDX-License-Identifier: Apache-2.0
// Test helper: one rank's view of a device (the fake one in CI) — its own stream, device copies of
// host data enqueued on it, and results read back after Request::waitOnStream on that stream, as a
// torch user's current stream would. Every upload and download goes through the stream, so a
// collective that does not honour stream order reads or leaves stale data under the fake's delays.
#pragma once

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "device/device.h"
#include "smddp/error.h"
#include "smddp/types.h"

namespace smddp::testing {

using Bytes = std::vector<unsigned char>;
using Floats = std::vector<float>;

// Floats as the bytes a device buffer holds, and back.
inline Bytes bytesOf(const Floats& x) {
  Bytes b(x.size() * 4);
  if (!b.empty()) std::memcpy(b.data(), x.data(), b.size());
  return b;
}

inline Floats floatsOf(const Bytes& b) {
  Floats x(b.size() / 4);
  if (!b.empty()) std::memcpy(x.data(), b.data(), b.size());
  return x;
}

class DeviceRank {
 public:
  explicit DeviceRank(device::Device& dev) : dev_(dev), stream_(dev.createStream(0)) {}
  ~DeviceRank() {
    sync();
    for (void* p : owned_) dev_.freeDevice(p);
    dev_.destroyStream(stream_);
  }
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;

  void* stream() const { return stream_; }
  // A device buffer holding `host` (copied on the stream from a copy kept until the next sync()).
  // Empty: a 16-byte allocation, so even an empty buffer is device memory.
  void* upload(const std::vector<unsigned char>& host) {
    void* d = dev_.allocDevice(std::max<size_t>(host.size(), 16), 0);
    owned_.push_back(d);
    staged_.push_back(host);
    if (!host.empty()) dev_.copyAsync(d, staged_.back().data(), host.size(), stream_);
    return d;
  }
  Buffer buffer(void* d, size_t count, DataType t) const {
    return Buffer(d, count, t, MemoryType::kCuda, 0, stream_);
  }
  std::vector<unsigned char> download(const void* d, size_t bytes) {
    std::vector<unsigned char> h(bytes);
    if (bytes > 0) dev_.copyAsync(h.data(), d, bytes, stream_);
    sync();
    return h;
  }
  void sync() {
    device::Event e = dev_.createEvent(0);
    dev_.record(e, stream_);
    const bool done =
        device::waitEvent(dev_, e, std::chrono::steady_clock::now() + std::chrono::seconds(60));
    dev_.destroyEvent(e);
    if (!done) throw Error(ErrorCode::kTimeout, "test: the rank's stream did not drain in 60 s");
    staged_.clear();
  }

 private:
  device::Device& dev_;
  device::Stream stream_;
  std::vector<void*> owned_;
  std::deque<std::vector<unsigned char>> staged_;  // uploads' sources, until the stream drains
};

}  // namespace smddp::testing
