// SPDX-License-Identifier: Apache-2.0
// The fake-device test mode (fake_mirror.h).
#include "fake_mirror.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "smddp/device.h"
#include "smddp/error.h"

namespace smddp::torch_shim {
namespace {

constexpr std::chrono::seconds kDrainBound{120};

// This thread's stream on the fake device: its "current stream". Never destroyed: a thread's
// exit may come after the device's.
void* threadStream() {
  thread_local void* stream = device_api::createStream(0);
  return stream;
}

thread_local std::vector<Mirror> pending;

}  // namespace

bool fakeDeviceMode() {
  static const bool fake = device_api::fake();  // the configuration only: CUDA is not probed
  return fake;
}

Buffer mirrorOf(const at::Tensor& tensor, DataType dtype) {
  const auto count = static_cast<size_t>(tensor.numel());
  if (count == 0) return Buffer(nullptr, 0, dtype, MemoryType::kCuda, 0, threadStream());
  auto* host = static_cast<char*>(tensor.storage().data_ptr().get());
  const size_t begin = static_cast<size_t>(static_cast<char*>(tensor.data_ptr()) - host);
  const size_t end = begin + count * tensor.element_size();
  Mirror* mirror = nullptr;
  for (Mirror& m : pending) {
    if (m.host == host) mirror = &m;
  }
  if (mirror == nullptr) {
    const size_t bytes = tensor.storage().nbytes();
    void* device = device_api::alloc(bytes, 0);
    device_api::copyAsync(device, host, bytes, threadStream());
    pending.push_back(Mirror{tensor, host, bytes, device, {}, threadStream()});
    mirror = &pending.back();
  }
  mirror->ranges.emplace_back(begin, end);
  return Buffer(static_cast<char*>(mirror->device) + begin, count, dtype, MemoryType::kCuda, 0,
                threadStream());
}

std::vector<Mirror> takeMirrors() { return std::exchange(pending, {}); }

MirrorScope::MirrorScope() : mark_(pending.size()) {}

MirrorScope::~MirrorScope() {
  if (!armed_ || pending.size() <= mark_) return;
  try {
    device_api::synchronize(threadStream(), kDrainBound);  // their uploads
    for (size_t i = mark_; i < pending.size(); ++i) device_api::free(pending[i].device);
  } catch (...) {  // a destructor: the memory stays allocated
  }
  pending.resize(mark_);
}

void Mirrors::download() {
  if (mirrors_.empty()) return;
  for (Request& r : requests_) r.wait();  // the result is in device memory (throws its error)
  void* stream = threadStream();
  for (const Mirror& m : mirrors_) {
    for (const auto& [begin, end] : m.ranges) {
      device_api::copyAsync(m.host + begin, static_cast<const char*>(m.device) + begin, end - begin,
                            stream);
    }
  }
  device_api::synchronize(stream, kDrainBound);
}

void Mirrors::release() {
  if (mirrors_.empty()) return;
  for (Request& r : requests_) {
    try {
      r.wait();
    } catch (...) {  // failed: its device work still ended (the engine lets it go)
    }
  }
  bool drained = true;
  for (size_t i = 0; i < mirrors_.size(); ++i) {
    const bool seen = std::any_of(mirrors_.begin(), mirrors_.begin() + static_cast<long>(i),
                                  [&](const Mirror& m) { return m.stream == mirrors_[i].stream; });
    try {
      if (!seen) device_api::synchronize(mirrors_[i].stream, kDrainBound);
    } catch (...) {  // an upload still pending: the memory stays allocated
      drained = false;
    }
  }
  for (const Mirror& m : mirrors_) {
    if (drained) device_api::free(m.device);
  }
  mirrors_.clear();
  requests_.clear();
}

}  // namespace smddp::torch_shim
