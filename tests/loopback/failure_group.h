// SPDX-License-Identifier: Apache-2.0
// Test harness for the failure tests: an in-memory Store (with a switch that freezes one rank's
// beacon, as if its host vanished) and n communicators over one loopback fabric that publish
// progress beacons through it. Ranks run as threads (loopback_group.h's runRanks).
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "loopback_group.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp::testing {

class MemoryStore : public Store {
 public:
  void set(const std::string& key, const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& frozen : frozen_) {
      if (key.size() >= frozen.size() && key.compare(key.size() - frozen.size(), frozen.size(), frozen) == 0) return;
    }
    values_[key] = value;
    cv_.notify_all();
  }
  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cv_.wait_for(lock, timeout, [&] { return values_.count(key) > 0; })) {
      throw Error(ErrorCode::kStore, "memory store: key '" + key + "' not set");
    }
    return values_[key];
  }
  int64_t add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& v = values_[key];
    const int64_t now = (v.empty() ? 0 : std::stoll(v)) + delta;
    v = std::to_string(now);
    cv_.notify_all();
    return now;
  }
  // From now on, writes to "<any prefix>/progress/<rank>" are dropped: its heartbeat stops.
  void freezeBeacon(int rank) {
    std::lock_guard<std::mutex> lock(mutex_);
    frozen_.insert("/progress/" + std::to_string(rank));
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  std::map<std::string, std::string> values_;
  std::set<std::string> frozen_;
};

struct WatchedGroup {
  std::shared_ptr<MemoryStore> store;
  std::shared_ptr<transport::LoopbackFabric> fabric;
  std::vector<std::unique_ptr<Communicator>> comms;
};

// n ranks with the given settings (timeout, beacon period, heartbeat, dump path...).
inline WatchedGroup makeWatchedGroup(int n, const core::Settings& settings) {
  WatchedGroup g;
  g.store = std::make_shared<MemoryStore>();
  g.fabric = transport::LoopbackFabric::create(n);
  for (int r = 0; r < n; ++r) {
    g.comms.push_back(std::make_unique<Communicator>(std::make_unique<core::CommunicatorImpl>(
        g.fabric->endpoint(r), settings, g.store, "test")));
  }
  return g;
}

// Settings for fault tests: short beacon period and heartbeat, the given collective timeout.
inline core::Settings faultSettings(std::chrono::milliseconds timeout) {
  Options options;
  options.timeout = timeout;
  core::Settings s = core::resolveSettings(options, Config::fromMap({}));
  s.watch.beaconPeriod = std::chrono::milliseconds(50);
  s.watch.heartbeatTimeout = std::chrono::milliseconds(1500);
  return s;
}

}  // namespace smddp::testing
