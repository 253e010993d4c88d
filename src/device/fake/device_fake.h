// SPDX-License-Identifier: Apache-2.0
// The fake device (device/device.h): a GPU simulated on the host for tests on machines without
// one. Memory: fake_memory.h; streams and events: fake_stream.h.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include "device/device.h"

namespace smddp::device {

// How long the first launch of a reduction that was not loaded (Device::loadKernels) waits for
// every stream of its ordinal to go idle, as CUDA's lazy loading may, before it fails.
constexpr std::chrono::milliseconds kLazyLoadBound{10000};

// devices: how many ordinals it reports; delayUs: each stream's random delay before every task
// (0..delayUs microseconds; 0: none); seed: the first stream's random seed (the next ones follow).
std::unique_ptr<Device> makeFakeDevice(int devices, int64_t delayUs, uint64_t seed,
                                       std::chrono::milliseconds lazyLoadBound = kLazyLoadBound);

}  // namespace smddp::device
