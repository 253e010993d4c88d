// SPDX-License-Identifier: Apache-2.0
// -np N: starts N ranks of this host as forked child processes that rendezvous through a file store
// in a fresh temporary directory. Invariant: the parent never waits unbounded — after the bound,
// or once one child has failed (plus a grace period for the others to notice), it kills the rest,
// reports who failed and how, removes the directory and returns non-zero.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>

namespace smddp::bench {

struct LaunchLimits {
  std::chrono::milliseconds bound{std::chrono::hours(1)};    // whole run
  std::chrono::milliseconds grace{std::chrono::seconds(5)};  // after the first failure
  // An exit status whose child has already said why (the perf tools' "wrong results"): it still
  // fails the launch but is not reported again.
  int explainedStatus = -1;
  // Bind rank r to the r-th CPU this process may use, when there are at least n of them (what
  // Open MPI's mpirun does by default for up to 2 ranks); otherwise leave placement to the
  // scheduler, or with bindRoundRobin bind rank r to the (r mod cpus)-th CPU (what mpirun's
  // --use-hwthread-cpus --map-by hwthread:OVERSUBSCRIBE --bind-to hwthread:overload-allowed does).
  bool bindCores = false;
  bool bindRoundRobin = false;
};

// Runs child(rank, storeDirectory) in each of n forked processes; the child's return value is its
// exit status (an escaping exception is reported and exits 1). Must be called before this process
// starts any thread. Returns 0 when every child exited 0, else 1; failures go to err.
int launchLocalRanks(int n, const std::function<int(int rank, const std::string& dir)>& child,
                     const LaunchLimits& limits, std::ostream& err);

}  // namespace smddp::bench
