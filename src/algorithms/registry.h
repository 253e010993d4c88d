// SPDX-License-Identifier: Apache-2.0
// The algorithms of each collective, and the pure function that picks one.
// select() depends only on its arguments (no globals, no environment), so it has its own tests.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "algorithms/arena/arena.h"
#include "algorithms/collective.h"
#include "algorithms/exec.h"

namespace smddp::algo {

using AlgorithmFn = void (*)(Exec&, const CollectiveArgs&);

// What an algorithm needs of its communicator, by name: {.arena = arena::Use::kSlots} or
// {.hostArenas = true, .unevenHosts = true}; {} needs only a transport. selectAlgorithm refuses an
// algorithm whose needs the Topology lacks.
struct Requirements {
  // What of the intra-host shared-memory arena it runs on, if anything (arena/arena.h).
  arena::Use arena = arena::Use::kNone;
  // Several hosts, the same number (>= 2) of ranks on each, an arena on every host (exec.h:
  // HostGroups).
  bool hostArenas = false;
  // With hostArenas: also where the hosts hold different numbers of ranks (only leaders on the
  // network).
  bool unevenHosts = false;
};

struct Algorithm {
  CollectiveKind kind;
  const char* name;         // as used in SMDDP_ALGO
  const char* description;  // steps and cost, one line
  AlgorithmFn run;
  Requirements needs = {};

  bool needsArena() const { return needs.arena != arena::Use::kNone; }
};

// An algorithm of one collective, as its table (tables.cc) lists it: the kind is the table's.
struct AlgorithmEntry {
  const char* name;
  const char* description;
  AlgorithmFn run;
  Requirements needs = {};
};

// A contiguous run of algorithms (C++17 has no std::span).
struct AlgorithmSpan {
  const Algorithm* first = nullptr;
  const Algorithm* last = nullptr;
  const Algorithm* begin() const { return first; }
  const Algorithm* end() const { return last; }
};

// Every algorithm: the collectives' tables one after another, each in its own fixed order (the
// order SMDDP_ALGO's errors list a collective's names in).
const std::vector<Algorithm>& registry();
// The algorithms of one collective, in its table's order (empty for send, recv and control).
AlgorithmSpan algorithmsOf(CollectiveKind kind);
const Algorithm* findAlgorithm(CollectiveKind kind, const char* name);

// Parsed SMDDP_ALGO: collective -> algorithm name. Accepts allreduce / all_reduce, broadcast,
// allgather / all_gather, barrier, reduce_scatter / reducescatter, reduce, gather, scatter.
// Throws Error(kInvalidArgument) naming the bad entry.
using AlgorithmOverrides = std::map<CollectiveKind, std::string>;
AlgorithmOverrides parseAlgorithmOverrides(const std::string& spec);

struct Topology {
  int ranks = 1;
  int hosts = 1;
  bool arena = false;     // every rank maps the shared-memory arena (arena/arena.h)
  size_t eagerBytes = 0;  // broadcasts up to this size take the arena's eager ring
  // Several hosts, the same number (>= 2) of ranks on each, an arena on every host (HostGroups).
  bool hostArenas = false;
  // Several hosts with different numbers of ranks, an arena on every host (HostGroups): only the
  // algorithms marked unevenHosts run.
  bool unevenHosts = false;
  // Every rank has shareable tensor memory (arena/pool.h, with the arena): large all_reduce,
  // all_gather, reduce_scatter and broadcast take `pooled`, in place when the tensors are in it.
  bool pool = false;
};

// From this size (a call's largest buffer) the algorithms that can work in place on tensors in
// the ranks' shareable memory (arena/in_place.h) ask whether they are: `pooled` on one host, the
// host phases of the hierarchical forms across hosts. Asking costs one arena synchronisation when
// they are not, small beside the copies of a buffer this large; below it the arena's copies run
// from the caches and in place saves nothing measurable.
constexpr size_t kInPlaceMinBytes = 1024 * 1024;

const Algorithm& selectAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology,
                                 const AlgorithmOverrides& overrides);

// SMDDP_DETERMINISTIC: the algorithm of a reduction (all_reduce, reduce_scatter, reduce) whose bits
// depend on the inputs and the number of ranks alone: the selector's own choice (SMDDP_ALGO
// aside) when it reduces in rank order (the arena's one-host forms), else fixed_order.
const Algorithm& deterministicAlgorithm(CollectiveKind kind, size_t bytes,
                                        const Topology& topology);

// The cross-host all_reduce of the hierarchical algorithms: a ring when a rank's part is larger
// than this for `hosts` hosts, recursive doubling otherwise. 64 KiB with 2 hosts, scaled by the
// ring's step count over recursive doubling's (2 (H - 1) against log2 H, plus 2 when H is not a
// power of two), since the ring's per-step latency grows with H where its bandwidth advantage
// does not: about 1.1 MiB with 128 hosts (bench/model finds recursive doubling faster there).
size_t crossRingMinBytes(int hosts);

// Runs one collective on this rank as the core does: the checks earlier collectives deferred
// (arena::settleDeferred, less those this algorithm settles itself), the algorithm, then waits
// for its ops.
void runCollective(const Algorithm& algorithm, Exec& exec, const CollectiveArgs& args);

}  // namespace smddp::algo
