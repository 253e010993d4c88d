// SPDX-License-Identifier: Apache-2.0
// StragglerTally: the straggler detector's arithmetic (smddp/straggler.h says what a straggler
// is). It takes one window of collectives at a time, every rank's samples of them
// (straggler_samples.h), and keeps per rank the lateness figures that stragglerReport() returns.
// No store, no clock, no thread: the exchange (straggler_exchange.h) feeds it on rank 0.
// Invariants: memory is bounded by the group size (a fixed histogram per rank, not the samples);
// a window whose samples are incomplete, inconsistent or from a rank that lost them changes
// nothing; clock offsets are estimated from each window itself, so ranks whose clocks differ by
// any constant are judged alike.
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "smddp/straggler.h"
#include "watch/straggler_samples.h"

namespace smddp::watch {

// Rank r's samples of the window's collectives: samples[r][0] is the collective before the
// window (for the own time of the first one), samples[r][1..count] the window's. A rank whose
// vector has another length (it lost them) makes the window unusable.
using StragglerWindow = std::vector<std::vector<StragglerSample>>;

struct StragglerVerdict {
  uint64_t compared = 0;               // collectives of the window compared
  std::vector<int> named;              // ranks named in it
  std::vector<uint64_t> lateArrivals;  // per rank: collectives it arrived late at
  std::vector<double> lateMs;          // per rank: its mean lateness in those
  std::vector<CollectiveKind> kind;    // per rank: the collective it was most often late at
};

class StragglerTally {
 public:
  // At least kMinCompared collectives of a window must be comparable for anyone to be named.
  static constexpr uint64_t kMinCompared = 8;
  StragglerTally(std::vector<std::string> hosts, std::chrono::nanoseconds threshold);

  StragglerVerdict add(const StragglerWindow& window);
  // Ranks ordered: named first, then by late arrivals and mean lateness; at most maxRanks.
  StragglerReport report(size_t maxRanks) const;

  // The WARN line for rank r of a verdict: "straggler: rank R (host) arrived X ms after the
  // median in N of the last M all_reduce calls".
  std::string warning(int rank, const StragglerVerdict& v) const;

 private:
  static constexpr size_t kBuckets = 128;  // lateness histogram: 4 buckets per doubling from 1 us
  struct PerRank {
    uint64_t measured = 0;
    uint64_t lateArrivals = 0;
    double sumLateMs = 0;
    uint32_t kinds = 0;  // bit per CollectiveKind it arrived late at
    bool named = false;
    uint64_t namedWindows = 0;
    std::array<uint64_t, kBuckets> histogram{};
  };
  static size_t bucketOf(int64_t ns);
  static double bucketTopMs(size_t bucket);
  double p99Ms(const PerRank& p) const;

  std::vector<std::string> hosts_;
  int64_t thresholdNs_;
  uint64_t windows_ = 0;
  uint64_t compared_ = 0;
  std::vector<int> named_;
  std::vector<PerRank> ranks_;
};

// A collective that waits for every rank (so its end is one moment for the group).
bool synchronizing(CollectiveKind kind);

// The report as the detector publishes it to the other ranks, and back. decode() checks what it
// reads (it comes from the store): anything malformed gives an empty report.
std::string encodeReport(const StragglerReport& report);
StragglerReport decodeReport(const std::string& text);

}  // namespace smddp::watch
