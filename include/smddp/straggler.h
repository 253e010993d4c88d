// SPDX-License-Identifier: Apache-2.0
// Straggler report (Communicator::stragglerReport): which ranks arrive late at the group's
// collectives, measured by the communicator's progress beacons (docs/TROUBLESHOOTING.md,
// "Slow ranks").
// A rank's lateness in one collective is its arrival (the call) after the median rank's, on
// clocks aligned per window of collectives (a collective's end is one moment for the whole
// group, so the ends give each rank's clock offset). A rank is named when, in more than half of
// the latest window's collectives, it arrived last, later than the median by more than the
// threshold (SMDDP_STRAGGLER_MS), and through its own time: the time it spent outside
// communication before the call exceeded the median rank's by the threshold too. A rank late only
// because it waited for someone else is therefore not named. Only the collectives that wait for
// every rank count (all_reduce, all_gather, reduce_scatter, all_to_all, barrier).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smddp {

struct StragglerRank {
  int rank = 0;
  std::string host;
  uint64_t measured = 0;      // collectives of this rank compared with the group's
  uint64_t lateArrivals = 0;  // ... in which it arrived last and late by its own time
  double meanLatenessMs = 0;  // its arrival after the median rank's, mean over `measured`
  double p99LatenessMs = 0;   // 99th percentile of the same (0 when never late)
  bool named = false;         // a straggler in the latest window
  uint64_t namedWindows = 0;  // windows it was named in
  std::vector<std::string> collectives;  // the collectives it arrived late at ("all_reduce")
};

struct StragglerReport {
  bool enabled = false;  // SMDDP_STRAGGLER_MS > 0, a store and beacons (SMDDP_BEACON_MS > 0)
  double thresholdMs = 0;
  uint64_t windows = 0;      // windows of collectives compared so far
  uint64_t collectives = 0;  // collectives compared so far (every rank's samples present)
  std::vector<int> named;    // the ranks named in the latest window
  // Ranks by lateness, the named first: every rank on the group's rank 0, which measures; on
  // the others the copy rank 0 publishes, its 64 latest ranks (a group of thousands stays small).
  std::vector<StragglerRank> ranks;
};

}  // namespace smddp
