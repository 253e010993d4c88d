// SPDX-License-Identifier: Apache-2.0
// The device watchdog (watchdog.h).
#include "planes/smddp/watchdog.h"

#include <algorithm>
#include <utility>

#include "smddp/helper_thread.h"

namespace smddp::planes {
namespace {

std::string seconds(std::chrono::steady_clock::duration d) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  return std::to_string(ms / 1000) + "." + std::to_string(ms % 1000 / 100) + " s";
}

}  // namespace

DeviceWatchdog::DeviceWatchdog(device::Device& device,
                               std::function<std::chrono::milliseconds()> bound, std::string who,
                               Report report)
    : device_(device),
      bound_(std::move(bound)),
      who_(std::move(who)),
      report_(std::move(report)),
      thread_(startHelperThread("smddp-devwatch", [this] { run(); })) {}

DeviceWatchdog::~DeviceWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void DeviceWatchdog::watch(const std::shared_ptr<StagedCall>& call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.push_back(call);
}

void DeviceWatchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    const auto period = std::clamp<std::chrono::milliseconds>(
        bound_() / 4, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
    wake_.wait_for(lock, period, [this] { return stop_; });
    if (stop_) return;
    lock.unlock();
    check(Clock::now());
    lock.lock();
  }
}

void DeviceWatchdog::check(Clock::time_point now) {
  std::vector<std::shared_ptr<StagedCall>> calls;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto gone = std::remove_if(calls_.begin(), calls_.end(),
                               [](const std::weak_ptr<StagedCall>& c) { return c.expired(); });
    calls_.erase(gone, calls_.end());
    for (const auto& c : calls_) {
      if (auto call = c.lock()) calls.push_back(std::move(call));
    }
  }
  const auto bound = bound_();
  const auto describe = [&](const StagedCall& call) {
    return who_ + ": " + call.what() + " on " + device_.name() + " device memory, posted " +
           seconds(now - call.posted()) + " ago: ";
  };
  // First the calls still being enqueued: no device call needed to see those.
  for (const auto& call : calls) {
    if (call->enqueued() || call->reported_.load() || now - call->posted() < bound) continue;
    call->reported_ = true;
    report_(describe(*call) +
            "the caller is still enqueuing its device work: a device call on the caller's thread "
            "has not returned (on CUDA, a lazy kernel load or an implicit synchronization waits "
            "for every stream, including those this call holds until its host part runs)");
  }
  for (const auto& call : calls) {
    if (!call->enqueued() || call->reported_.load()) continue;
    bool done = false;
    try {
      done = device_.done(call->end());
    } catch (const std::exception& e) {
      call->reported_ = true;
      report_(describe(*call) + "its device work failed: " + e.what());
      continue;
    }
    if (done) continue;  // dropped from calls_ once the stager and its request let it go
    const size_t raised = call->raised();
    const auto age = now - call->posted();
    if (raised == call->segments() && age >= bound) {
      call->reported_ = true;
      report_(describe(*call) + "its host part is done (" + std::to_string(raised) + " of " +
              std::to_string(call->segments()) +
              " segments), but its device work has not finished: the device stream is stuck");
    } else if (raised < call->segments() && age >= 2 * bound) {
      call->reported_ = true;
      report_(describe(*call) + std::to_string(raised) + " of " + std::to_string(call->segments()) +
              " segments' host parts are done: the rest wait for their input (the work queued "
              "before the call on the caller's stream) or for the peers");
    }
  }
}

}  // namespace smddp::planes
