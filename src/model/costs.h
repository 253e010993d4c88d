// SPDX-License-Identifier: Apache-2.0
// The cost model of smddp's collectives: what one call of a named algorithm costs on a Machine
// (machine.h), following the code step by step (each algorithm's file in src/algorithms/ says
// its steps; forms.h says which of them each cost counts). One model for the library's time
// estimates (Communicator::estimate) and for bench/model (through c_api.h), which calibrates
// and tabulates through it.
//
// Sizes are nccl-tests': the whole buffer for all_reduce, broadcast and reduce; the gathered
// output for all_gather and gather; the whole input for reduce_scatter and scatter; one rank's
// whole send buffer for all_to_all(v); the message for send and recv.
//
// seconds() is what a call costs when calls follow each other (a training loop, the perf tools):
// on a plain link the sum of its steps; through a token bucket (Machine::link_burst > 0) the
// transfers on the critical path pass at once while the bucket holds them, so a call takes its
// latency plus what exceeds the burst at the rate, but never less than its busiest link's bytes
// per direction at the rate, which is all the bucket refills with. Plus call_alpha.
// Invariant: pure functions of (machine, collective, algorithm, size); no measurement here.
#pragma once

#include <string>
#include <vector>

#include "common/call.h"
#include "model/machine.h"

namespace smddp::model {

// One call's (latency seconds, wire bytes on the critical path, busiest link's bytes per
// direction): the plain-link time is latency + wire x netBeta().
struct Parts {
  double latency = 0.0;
  double wire = 0.0;
  double busiest = 0.0;
};

// The algorithms the model costs for `kind` (the selector's names).
std::vector<std::string> algorithmsOf(CollectiveKind kind);
bool modelled(CollectiveKind kind, const std::string& algorithm);

// Seconds of one call on a plain link, call_alpha not included. Error(kInvalidArgument) for an
// algorithm the model does not cost.
double sumSeconds(const Machine& m, CollectiveKind kind, const std::string& algorithm,
                  double bytes);
Parts parts(const Machine& m, CollectiveKind kind, const std::string& algorithm, double bytes);
// Seconds of one call, calls back to back (above), call_alpha included.
double seconds(const Machine& m, CollectiveKind kind, const std::string& algorithm,
               double bytes);

// The NCCL plane's time of one call (forms_nccl.cc), calls back to back, call_alpha included:
// NCCL's ring over all ranks, its channels taken together at the ring's bottleneck (the GPUs'
// in-node fabric at gpu_rate; where the ring leaves a node, the node's network at net_rate x
// net_eff), a step costing gpu_alpha. Sizes as above.
double ncclSeconds(const Machine& m, CollectiveKind kind, double bytes);

// nccl-tests' bus bandwidth factor of `kind` on n ranks (busbw = size / time x factor).
double busbwFactor(CollectiveKind kind, int ranks);

}  // namespace smddp::model
