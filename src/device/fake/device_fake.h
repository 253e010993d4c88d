// SPDX-License-Identifier: Apache-2.0
// The fake device (device/device.h): a GPU simulated on the host for tests on machines without
// one. Memory: fake_memory.h; streams and events: fake_stream.h.
#pragma once

#include <cstdint>
#include <memory>

#include "device/device.h"

namespace smddp::device {

// devices: how many ordinals it reports; delayUs: each stream's random delay before every task
// (0..delayUs microseconds; 0: none); seed: the first stream's random seed (the next ones follow).
std::unique_ptr<Device> makeFakeDevice(int devices, int64_t delayUs, uint64_t seed);

}  // namespace smddp::device
