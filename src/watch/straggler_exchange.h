// SPDX-License-Identifier: Apache-2.0
// StragglerExchange: how the ranks' samples (straggler_samples.h) reach the detector, rank 0 of
// the communicator, which judges them (straggler_analysis.h), warns, and hands its report back.
// It runs on the progress beacon's thread, one step() per beacon period (rank 0: four). Store keys
// under the
// beacon's prefix:
//   straggler/request     "<id> <first> <count>\n<report>": rank 0 asks for the samples of
//                         collectives [first - 1, first + count) and publishes its report
//   straggler/round       the latest request's id (a counter the others poll with add(key, 0))
//   straggler/samples/<r> "<id>\n<samples>", or "<id>\ngone" when rank r's ring moved past them
//   straggler/answers     answers given so far (rank 0 asks again once all are in)
// Rank 0 asks for the collectives it completed since its last window (the latest 1024 at most,
// 32 at least): consecutive windows while the ring of every rank keeps them, so every
// collective is compared up to the ring's 2048 collectives per beacon period.
// Invariants: at most one request is open; each rank stores at most one answer per request and
// store traffic is a few small keys per rank per period; nothing here waits longer than the
// beacon's read bound; a rank that never answers (a dead one: the beacon names it) leaves the
// request open and costs one counter read per period.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "smddp/store.h"
#include "smddp/straggler.h"
#include "watch/straggler_analysis.h"
#include "watch/straggler_samples.h"

namespace smddp::watch {

class StragglerExchange {
 public:
  static constexpr uint64_t kMinWindow = 32;
  static constexpr uint64_t kMaxWindow = 1024;
  static constexpr size_t kPublishedRanks = 64;

  StragglerExchange(std::shared_ptr<Store> store, std::string prefix, int rank,
                    std::vector<std::string> hosts, const StragglerSamples& samples,
                    std::chrono::nanoseconds threshold, std::chrono::milliseconds readTimeout);
  void step();  // the beacon thread, once per period (rank 0: also between)
  bool detects() const { return rank_ == 0; }
  StragglerReport report() const;  // any thread

 private:
  void detect();
  void respond();
  bool collect(StragglerWindow& window);  // rank 0: every rank's answer to the open request
  std::string samplesText(uint64_t first, uint64_t count, bool& pending) const;
  std::string key(const std::string& what) const { return prefix_ + "/straggler/" + what; }

  std::shared_ptr<Store> store_;
  std::string prefix_;
  int rank_;
  int size_;
  const StragglerSamples& samples_;
  std::chrono::milliseconds readTimeout_;
  StragglerTally tally_;  // rank 0

  // Beacon thread only.
  uint64_t requestId_ = 0;  // rank 0: the open request (0: none); others: the one being served
  uint64_t answered_ = 0;   // others: the last request answered
  uint64_t rounds_ = 0;     // rank 0: requests made (the value of straggler/round)
  uint64_t first_ = 0, count_ = 0;
  uint64_t nextFirst_ = 1;  // rank 0: where the next window starts (index 0 has no predecessor)
  std::map<int, std::chrono::steady_clock::time_point> warned_;  // rank 0: last WARN per rank

  mutable std::mutex reportMutex_;
  StragglerReport report_;
};

}  // namespace smddp::watch
