// SPDX-License-Identifier: Apache-2.0
// Where a communicator's Machine (machine.h) comes from: priors for its shape, this machine's
// copy and reduction rates measured once per process, and a parameter file (SMDDP_COST_MODEL,
// written by bench/model calibrate) over both.
// Invariant: measureRates() runs its measurement once per process (a few milliseconds, no
// communication); parseParams() accepts exactly the Machine's names and nothing else.
#pragma once

#include <map>
#include <string>

#include "model/machine.h"

namespace smddp::model {

// A communicator's shape as the model sees it.
struct Shape {
  int nodes = 1;
  int perNode = 1;        // ranks per host (the largest host's, when they differ)
  unsigned hostCpus = 0;  // CPUs a host's ranks may use together (0: unknown)
  double slotBytes = 1 << 20;
  double segmentBytes = 1 << 20;
};

// One rank's copy rate (bytes/s, a memcpy larger than the caches) and reduction cost (seconds
// per byte of a float32 sum through the library's kernels) on this machine.
struct Rates {
  double copyRate = 0.0;
  double gamma = 0.0;
};
const Rates& measureRates();

// Priors for `shape` with `rates`: cpu_share from the ranks per usable CPU; the arena's
// synchronisation, the call's fixed cost and the network's (a datacentre link) as params.cc
// says.
Machine priors(const Shape& shape, const Rates& rates);

// The top-level numbers of a JSON object (other values, such as bench/model's "calibrated_on",
// are skipped). Error(kInvalidArgument) naming `source` for text that is not such an object.
std::map<std::string, double> parseParams(const std::string& text, const std::string& source);
// Sets the Machine's fields named in `params`; Error(kInvalidArgument) naming `source` and the
// key for a name that is not one, or a value out of range.
void applyParams(Machine& m, const std::map<std::string, double>& params,
                 const std::string& source);
// The file's parameters over `m`; Error(kInvalidArgument) naming the path when it cannot be read.
void applyParamsFile(Machine& m, const std::string& path);

}  // namespace smddp::model
