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
  // Runs only with the intra-host shared-memory arena. Such an algorithm releases at least one
  // arena use per collective (ArenaStep), which settles a deferred check (runCollective).
  bool needsArena = false;
  uint64_t nameHash = 0;    // algorithmNameHash(name), for shapeHash without rehashing the name
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
};

const Algorithm& selectAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology,
                                 const AlgorithmOverrides& overrides);

// Runs one collective on this rank as the core does: the algorithm, then waits for its ops. A
// check an earlier collective deferred (an shm broadcast's root) runs first when the algorithm
// does not use the arena; the arena algorithms run it as they release their first use.
void runCollective(const Algorithm& algorithm, Exec& exec, const CollectiveArgs& args);
// Runs the check an earlier collective deferred (an shm broadcast's root), if any: before a
// collective that does not use the arena, and at shutdown.
void settleDeferred(Exec& exec);

}  // namespace smddp::algo
