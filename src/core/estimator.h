// SPDX-License-Identifier: Apache-2.0
// Estimator: a communicator's time estimates (Communicator::beginEstimate). While it is active,
// the communicator costs each call it is given instead of running it: the algorithm its selector
// would run (its topology and overrides), at the cost model's time (model/costs.h) on a Machine
// for this communicator: priors for its shape (hosts, ranks per host, the CPUs they may use),
// this machine's copy and reduction rates (measured once per process, at the first estimate),
// and SMDDP_COST_MODEL's file over both. Calls are costed one after another (no overlap).
// CUDA calls on smddp's own plane add their staging copies (to host memory and back) at
// kDeviceCopyRate; the NCCL plane's (EstimatorSetup::onNccl) are costed as NCCL's ring
// (model::ncclSeconds), algorithm "nccl".
// Thread-safe: calls may be costed from several threads; begin and end are the caller's order.
// Invariant: nothing here communicates, so a rank may estimate alone.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "algorithms/collective.h"
#include "algorithms/registry.h"
#include "model/machine.h"

namespace smddp::core {

// What the estimator knows of its communicator.
struct EstimatorSetup {
  int rank = 0;
  int size = 1;
  algo::Topology topology;
  algo::AlgorithmOverrides overrides;
  int ranksPerHost = 1;   // the largest host's
  unsigned hostCpus = 0;  // CPUs this host's ranks may use together (0: unknown)
  size_t slotBytes = 1 << 20;
  size_t segmentBytes = 1 << 20;
  std::string paramsPath;  // SMDDP_COST_MODEL ("" : none)
  // Whether a call on CUDA memory runs on the NCCL plane (null: never).
  std::function<bool(const algo::CollectiveArgs&)> onNccl;
};

class Estimator {
 public:
  // Pinned host memory to and from a device, bytes/s (PCIe 4 x16 in practice): a prior.
  static constexpr double kDeviceCopyRate = 20e9;

  // Builds the Machine (measures the rates on first use in the process; reads the file):
  // Error(kInvalidArgument) naming the file when it cannot be used.
  explicit Estimator(EstimatorSetup setup);

  const model::Machine& machine() const { return machine_; }
  // Seconds of one call; the algorithm it would run in *algorithm (the registry's name).
  double cost(const algo::CollectiveArgs& args, std::string* algorithm = nullptr) const;
  // Adds cost(args) to the running total.
  void add(const algo::CollectiveArgs& args);
  // The total so far in seconds, and clears it.
  double take();

 private:
  EstimatorSetup setup_;
  model::Machine machine_;
  mutable std::mutex mutex_;
  double total_ = 0.0;
};

}  // namespace smddp::core
