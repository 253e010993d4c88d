// SPDX-License-Identifier: Apache-2.0
// The measurement loop shared by every perf tool: for each (dtype, op, root, size) row, an
// out-of-place and an in-place group, each timed over -n iterations after -w warm-up ones, then
// (with -c 1) checked in a separate run. Invariant: every rank runs exactly the same sequence of
// collectives (row list, timing reductions and check reductions alike), so the communicator's
// ordering contract holds; timings are the max over ranks, CPU time per call (getrusage, every
// thread of the rank) the mean over ranks, #wrong the sum over ranks.
#pragma once

#include <ostream>
#include <vector>

#include "collective.h"
#include "options.h"
#include "report.h"
#include "smddp/communicator.h"

namespace smddp::bench {

struct RunnerContext {
  Communicator& comm;
  const CollectiveSpec& spec;
  const BenchOptions& opts;
  std::ostream* out;  // rows are printed here as they finish (rank 0); nullptr elsewhere
};

struct SweepResult {
  std::vector<RowResult> rows;
  int64_t outOfBounds = 0;  // damaged guard bytes, summed over ranks
};

SweepResult runSweep(const RunnerContext& ctx);

// The device this rank's buffers are on with -g 1 (rank mod the devices visible); -1 without.
// Throws Error(kUnsupported) when -g 1 finds no device.
int benchDevice(const Communicator& comm, const BenchOptions& o);

}  // namespace smddp::bench
