// SPDX-License-Identifier: Apache-2.0
// The device side of one call on CUDA buffers, as its Request sees it, whichever plane runs it
// (src/planes/smddp: staged or CUDA IPC; src/planes/nccl: NCCL): the device, the stream its
// device work runs on, and an event recorded after that work. Request::waitOnStream makes a
// caller's stream wait on end(); Request::wait waits for it on the host (bounded).
// Invariant: end() is recorded (or about to be: ready() tells) before the call's Request
// completes; once it completed, the device no longer touches the call's buffers.
#pragma once

#include <chrono>

#include "device/device.h"

namespace smddp::planes {

class DeviceWork {
 public:
  virtual ~DeviceWork() = default;
  virtual device::Device& device() const = 0;
  virtual device::Stream stream() const = 0;
  virtual device::Event end() const = 0;
  // False while end() is not yet recorded: a call whose NCCL communicator is still being formed
  // (its device work is enqueued later, by the plane). A stream must not wait on end() then.
  virtual bool ready() const { return true; }
  // Waits (bounded) until ready(); false when the deadline passed first.
  virtual bool awaitReady(std::chrono::steady_clock::time_point /*deadline*/) { return true; }
  // For a call whose Request no engine completes (the NCCL plane's): waits (bounded) until the
  // plane settled it, settling it at once when its device work is seen done. True once settled.
  virtual bool awaitSettled(std::chrono::steady_clock::time_point /*deadline*/) { return true; }
};

}  // namespace smddp::planes
