// SPDX-License-Identifier: Apache-2.0
// The CUDA implementation of device::Device (device_cuda.cc). No CUDA header here.
#pragma once

#include <memory>
#include <string>

#include "device/device.h"

namespace smddp::device {

// A Device over the CUDA runtime, or null when no device is usable; then `why` (when non-null)
// says why not.
std::unique_ptr<Device> makeCudaDevice(std::string* why);

}  // namespace smddp::device
