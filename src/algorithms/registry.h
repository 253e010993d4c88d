// SPDX-License-Identifier: Apache-2.0
// The algorithms of each collective, and the pure function that picks one.
// select() depends only on its arguments (no globals, no environment), so it has its own tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/exec.h"

namespace smddp::algo {

using AlgorithmFn = void (*)(Exec&, const CollectiveArgs&);

struct Algorithm {
  CollectiveKind kind;
  const char* name;         // as used in SMDDP_ALGO
  const char* description;  // steps and cost, one line
  AlgorithmFn run;
  // What of the intra-host shared-memory arena it runs on, if anything. A kSlots algorithm
  // releases at least one slot use per collective (ArenaStep), which settles a slot broadcast's
  // deferred check; a kRing one settles the eager ring's as it goes (runCollective).
  enum class ArenaUse { kNone, kSlots, kRing };
  ArenaUse arena = ArenaUse::kNone;

  bool needsArena() const { return arena != ArenaUse::kNone; }
};

// Every algorithm, in a fixed order.
const std::vector<Algorithm>& registry();
const Algorithm* findAlgorithm(CollectiveKind kind, const char* name);

// Parsed SMDDP_ALGO: collective -> algorithm name. Accepts allreduce / all_reduce, broadcast,
// allgather / all_gather, barrier. Throws Error(kInvalidArgument) naming the bad entry.
using AlgorithmOverrides = std::map<CollectiveKind, std::string>;
AlgorithmOverrides parseAlgorithmOverrides(const std::string& spec);

struct Topology {
  int ranks = 1;
  int hosts = 1;
  bool arena = false;  // every rank maps the shared-memory arena (transport/shm/arena.h)
  size_t eagerBytes = 0;  // broadcasts up to this size take the arena's eager ring
};

const Algorithm& selectAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology,
                                 const AlgorithmOverrides& overrides);

// Runs one collective on this rank as the core does: the algorithm, then waits for its ops.
// Checks earlier collectives deferred (shm broadcasts' roots) run first, except those the
// algorithm settles itself: a slot broadcast's as a kSlots algorithm releases its first use, the
// eager ring's as a kRing algorithm passes through the ring.
void runCollective(const Algorithm& algorithm, Exec& exec, const CollectiveArgs& args);
// Runs every check earlier collectives deferred (shm broadcasts' roots), waiting for the peers if
// need be (bounded by exec's deadline); `next`, the algorithm about to run, may settle its own
// kind itself. At shutdown `next` is null.
void settleDeferred(Exec& exec, const Algorithm* next = nullptr);

}  // namespace smddp::algo
