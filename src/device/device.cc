// SPDX-License-Identifier: Apache-2.0
// The process's device (SMDDP_DEVICE), the fake device singleton, and the host-side event wait.
#include "device/device.h"

#include <mutex>
#include <thread>

#include "common/config.h"
#include "device/fake/device_fake.h"
#include "smddp/error.h"

#ifdef SMDDP_DEVICE_HAVE_CUDA
#include "device/cuda/device_cuda.h"
#endif

namespace smddp::device {

const char* toString(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kPinned:
      return "pinned";
    case MemoryKind::kDevice:
      return "device";
  }
  return "unknown";
}

Device& fakeDevice() {
  static const std::unique_ptr<Device> device =
      makeFakeDevice(1, Config::global().fakeDelayUs, 0x5eed);
  return *device;
}

Device* cudaDevice(std::string* why) {
#ifdef SMDDP_DEVICE_HAVE_CUDA
  static std::string reason;
  static const std::unique_ptr<Device> device = makeCudaDevice(&reason);
  if (!device && why != nullptr) *why = reason;
  return device.get();
#else
  if (why != nullptr) *why = "this build of smddp has no CUDA support (nvcc was not found)";
  return nullptr;
#endif
}

Device* processDevice() {
  static Device* const device = []() -> Device* {
    const std::string& choice = Config::global().device;
    if (choice == "none") return nullptr;
    if (choice == "fake") return &fakeDevice();
    return cudaDevice();  // cuda or auto: null when no GPU is usable
  }();
  return device;
}

bool waitEvent(Device& device, Event event, std::chrono::steady_clock::time_point deadline) {
  auto pause = std::chrono::microseconds(1);
  while (!device.done(event)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(200));
  }
  return true;
}

}  // namespace smddp::device
