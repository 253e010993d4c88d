// SPDX-License-Identifier: Apache-2.0
// smddp/device.h over the process's device (device::processDevice()).
#include "common/config.h"
#include "device/device.h"
#include "smddp/device.h"
#include "smddp/error.h"

namespace smddp::device_api {
namespace {

device::Device& dev() {
  device::Device* d = device::processDevice();
  if (d == nullptr) {
    throw Error(ErrorCode::kUnsupported, "smddp: no device is usable (SMDDP_DEVICE)");
  }
  return *d;
}

}  // namespace

std::string name() {
  device::Device* d = device::processDevice();
  return d == nullptr ? "" : d->name();
}

bool fake() { return Config::global().device == "fake"; }

int count() {
  device::Device* d = device::processDevice();
  return d == nullptr ? 0 : d->count();
}

void* alloc(size_t bytes, int ordinal) { return dev().allocDevice(bytes, ordinal); }
void free(void* p) { dev().freeDevice(p); }
void* createStream(int ordinal) { return dev().createStream(ordinal); }
void destroyStream(void* stream) { dev().destroyStream(stream); }
void copyAsync(void* dst, const void* src, size_t bytes, void* stream) {
  dev().copyAsync(dst, src, bytes, stream);
}

void synchronize(void* stream, std::chrono::milliseconds bound) {
  device::Device& d = dev();
  device::Event e = d.createEvent(0);
  d.record(e, stream);
  const bool done = device::waitEvent(d, e, std::chrono::steady_clock::now() + bound);
  d.destroyEvent(e);
  if (!done) {
    throw Error(ErrorCode::kTimeout, "smddp: a " + std::string(d.name()) +
                                         " device stream did not drain within " +
                                         std::to_string(bound.count()) + " ms");
  }
}

}  // namespace smddp::device_api
