// SPDX-License-Identifier: Apache-2.0
// The device watchdog: says when a staged CUDA call's device work is late. The host never blocks
// on the device (stager.h), so nothing else would notice a stream that never finishes;
// without this a stuck GPU is a silent hang in the caller's next synchronize. One thread per
// stager wakes a few times per bound and reports each late call once, naming the rank, the call
// and what it waits for:
//   - still being enqueued `bound` after it was posted: a device call on the caller's thread has
//     not returned (CUDA blocks a launch behind a lazy kernel load or an implicit synchronization,
//     which waits for every stream, including those this call's flags hold);
//   - host part unfinished after 2 x `bound` (the engine's own timeout normally fails it first):
//     its input never reached host memory, or the peers never joined;
//   - host part finished, device work not, `bound` after it was posted: the device stream is stuck.
// Invariants: it keeps no call alive (weak references); the first check needs no device call, so
// a driver lock held by a stuck caller cannot hide that caller; reports go to `report` (the log).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "planes/smddp/stager.h"

namespace smddp::planes {

class DeviceWatchdog {
 public:
  using Clock = std::chrono::steady_clock;
  using Report = std::function<void(const std::string&)>;
  // `bound` is read at every check (a communicator's timeout may change); `who` prefixes every
  // report ("smddp: rank R/N (host)").
  DeviceWatchdog(device::Device& device, std::function<std::chrono::milliseconds()> bound,
                 std::string who, Report report);
  ~DeviceWatchdog();  // stops the thread
  DeviceWatchdog(const DeviceWatchdog&) = delete;
  DeviceWatchdog& operator=(const DeviceWatchdog&) = delete;

  void watch(const std::shared_ptr<StagedCall>& call);

 private:
  void run();
  // One pass over the watched calls at `now`.
  void check(Clock::time_point now);

  device::Device& device_;
  const std::function<std::chrono::milliseconds()> bound_;
  const std::string who_;
  const Report report_;
  std::mutex mutex_;  // guards calls_ and stop_
  std::condition_variable wake_;
  std::vector<std::weak_ptr<StagedCall>> calls_;
  bool stop_ = false;
  std::thread thread_;  // last: starts once everything above exists
};

}  // namespace smddp::planes
