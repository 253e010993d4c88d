// SPDX-License-Identifier: Apache-2.0
// selectAlgorithm: a pure function of (collective, bytes, topology, overrides).
//
// Without an override a collective takes the first row of its rule table (below) whose layout the
// topology has and whose range holds the call. bytes is args.bytes(): the whole buffer for
// all_reduce, broadcast and reduce, one rank's block for all_gather, reduce_scatter, gather,
// scatter and all_to_all; a range "over all ranks" measures bytes x ranks. Why each row, in cost
// terms (n ranks, B bytes, α per message, β per byte):
//   flat all_reduce: recursive doubling costs log2 n (α + Bβ), the ring 2(n−1)α + 2(n−1)/n Bβ:
//     the first while latency rules, the ring once bandwidth does. broadcast: the binomial tree's
//     log2 n whole-buffer hops against the chain's n − 2 + S segment hops; with 2 ranks there is
//     one hop and nothing to pipeline. all_gather: Bruck's log2 n messages plus one local copy
//     while the gathered buffer is small, the ring (straight into the output) above.
//   One host (the arena): no message, no matching, one copy in and one out. all_reduce:
//     arena_direct (one synchronisation, every rank reduces everything) while small, arena_split
//     (the reduction split n ways, two synchronisations per chunk) above; broadcast: the eager
//     ring up to its entry size; all_to_all: pairwise for large blocks, which libfabric's shm
//     moves with one copy where the arena takes two. From kInPlaceMinBytes, tensors in shareable
//     memory may be reduced or copied in place (`pooled`, which falls back to the arena form).
//   Across hosts with an arena on each: every collective hierarchical. One sender per host
//     (hier_leader) while the messages are small, since the forms in which every rank of a host
//     sends put L times the messages and bytes on its link; above, the forms that spread the
//     buffer over the host's ranks (hier_split, hier). all_to_all: hier_leader while the whole
//     buffer is small, hier (H−1 network messages per rank) for small blocks, pairwise (no
//     copies) above; all_to_allv only by name (its sizes differ per rank, so no size can choose
//     alike on every rank).
//   Hosts with different numbers of ranks: the leader forms where they beat the flat algorithms
//     (a leader's ring carries 2(H−1)/H of an all_reduce's buffer per host link where the flat
//     ring carries 2(n−1)/n); the flat forms where the link rules and a leader's copies only add.
// docs/ALGORITHMS.md ("Thresholds") has the measurements that set each threshold and the command
// that re-measures them.
#include <cstdint>

#include "algorithms/patterns/recursive_doubling.h"
#include "algorithms/registry.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

using K = CollectiveKind;

// Where a row applies.
enum class Layout {
  kHostArenas,   // topology.hostArenas: several hosts of the same size >= 2, an arena on each
  kUnevenHosts,  // topology.unevenHosts: hosts of different sizes, an arena on each
  kPool,         // topology.arena and topology.pool: tensors may be in shareable memory
  kArena,        // topology.arena: every rank on one host
  kAny,
};

constexpr size_t kKiB = 1024;
constexpr size_t kNoLimit = SIZE_MAX;
constexpr size_t kEagerEntry = SIZE_MAX - 1;  // as upTo: topology.eagerBytes

// The calls a row takes: sizes in [from, upTo] of one measure, at most maxRanks ranks.
struct Range {
  bool overAllRanks = false;  // measure bytes x ranks, not bytes
  size_t from = 0;
  size_t upTo = kNoLimit;
  size_t maxRanks = kNoLimit;
};

constexpr Range upTo(size_t bytes) { return {false, 0, bytes}; }
constexpr Range below(size_t bytes) { return {false, 0, bytes - 1}; }
constexpr Range from(size_t bytes) { return {false, bytes}; }
constexpr Range above(size_t bytes) { return {false, bytes + 1}; }
constexpr Range upToOverAllRanks(size_t bytes) { return {true, 0, bytes}; }
constexpr Range fromOverAllRanks(size_t bytes) { return {true, bytes}; }
constexpr Range eagerEntry() { return {false, 1, kEagerEntry}; }  // 0 < bytes <= eagerBytes
constexpr Range ranksUpTo(size_t ranks) { return {false, 0, kNoLimit, ranks}; }

struct Rule {
  Layout layout;
  const char* algorithm;
  Range range = {};
};

constexpr Layout kHostArenas = Layout::kHostArenas;
constexpr Layout kUnevenHosts = Layout::kUnevenHosts;
constexpr Layout kPool = Layout::kPool;
constexpr Layout kArena = Layout::kArena;
constexpr Layout kAny = Layout::kAny;

// Each table ends with a row for any layout and size.
const Rule kAllReduce[] = {
    {kHostArenas, "hier_leader", upTo(16 * kKiB)},
    {kHostArenas, "hier_split"},
    {kUnevenHosts, "hier_leader"},
    {kPool, "pooled", from(kInPlaceMinBytes)},
    {kArena, "arena_direct", upTo(16 * kKiB)},
    {kArena, "arena_split"},
    {kAny, "recursive_doubling", upTo(64 * kKiB)},
    {kAny, "ring"},
};

const Rule kBroadcast[] = {
    {kHostArenas, "hier_leader", upTo(16 * kKiB)},
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier_leader", above(16 * kKiB)},
    {kPool, "pooled", from(kInPlaceMinBytes)},
    {kArena, "arena_eager", eagerEntry()},
    {kArena, "arena"},
    {kAny, "binomial", upTo(64 * kKiB)},
    {kAny, "binomial", ranksUpTo(2)},
    {kAny, "chain"},
};

const Rule kAllGather[] = {
    {kHostArenas, "hier_leader", upToOverAllRanks(64 * kKiB)},
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier_leader", upToOverAllRanks(128 * kKiB)},
    {kUnevenHosts, "ring"},
    {kPool, "pooled", fromOverAllRanks(kInPlaceMinBytes)},
    {kArena, "arena"},
    {kAny, "bruck", upToOverAllRanks(64 * kKiB)},
    {kAny, "ring"},
};

const Rule kReduceScatter[] = {
    {kHostArenas, "hier_leader", upToOverAllRanks(64 * kKiB)},
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier_leader", upToOverAllRanks(128 * kKiB)},
    {kUnevenHosts, "ring"},
    {kPool, "pooled", fromOverAllRanks(kInPlaceMinBytes)},
    {kArena, "arena"},
    {kAny, "ring"},
};

const Rule kAllToAll[] = {
    {kHostArenas, "hier_leader", upToOverAllRanks(16 * kKiB)},
    {kHostArenas, "hier", upTo(16 * kKiB)},
    {kHostArenas, "pairwise"},
    {kUnevenHosts, "hier_leader", upToOverAllRanks(64 * kKiB)},
    {kUnevenHosts, "pairwise"},
    {kArena, "arena", below(64 * kKiB)},
    {kAny, "pairwise"},
};

const Rule kAllToAllV[] = {
    {kArena, "arena"},
    {kAny, "pairwise"},
};

const Rule kReduce[] = {
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier"},
    {kArena, "arena"},
    {kAny, "binomial"},
};

const Rule kGatherScatter[] = {
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier"},
    {kArena, "arena"},
    {kAny, "linear"},
};

const Rule kBarrier[] = {
    {kHostArenas, "hier"},
    {kUnevenHosts, "hier"},
    {kArena, "arena"},
    {kAny, "dissemination"},
};

struct Rules {
  CollectiveKind kind;
  const Rule* first;
  const Rule* last;
};

template <size_t N>
constexpr Rules rulesOf(CollectiveKind kind, const Rule (&table)[N]) {
  return {kind, table, table + N};
}

const Rules kRules[] = {
    rulesOf(K::kAllReduce, kAllReduce),   rulesOf(K::kBroadcast, kBroadcast),
    rulesOf(K::kAllGather, kAllGather),   rulesOf(K::kReduceScatter, kReduceScatter),
    rulesOf(K::kAllToAll, kAllToAll),     rulesOf(K::kAllToAllV, kAllToAllV),
    rulesOf(K::kReduce, kReduce),         rulesOf(K::kGather, kGatherScatter),
    rulesOf(K::kScatter, kGatherScatter), rulesOf(K::kBarrier, kBarrier),
};

bool has(const Topology& topology, Layout layout) {
  switch (layout) {
    case Layout::kHostArenas:
      return topology.hostArenas;
    case Layout::kUnevenHosts:
      return topology.unevenHosts;
    case Layout::kPool:
      return topology.arena && topology.pool;
    case Layout::kArena:
      return topology.arena;
    case Layout::kAny:
      return true;
  }
  return false;
}

bool holds(const Range& range, size_t bytes, size_t ranks, const Topology& topology) {
  const size_t size = range.overAllRanks ? bytes * ranks : bytes;
  const size_t upTo = range.upTo == kEagerEntry ? topology.eagerBytes : range.upTo;
  return size >= range.from && size <= upTo && ranks <= range.maxRanks;
}

// The default algorithm's name ("" for a kind without rules: no algorithm has that name).
const char* defaultName(CollectiveKind kind, size_t bytes, const Topology& topology) {
  const size_t ranks = topology.ranks > 0 ? static_cast<size_t>(topology.ranks) : 1;
  for (const Rules& rules : kRules) {
    if (rules.kind != kind) continue;
    for (const Rule* rule = rules.first; rule != rules.last; ++rule) {
      if (has(topology, rule->layout) && holds(rule->range, bytes, ranks, topology)) {
        return rule->algorithm;
      }
    }
  }
  return "";
}

constexpr size_t kCrossRingBytes = 64 * kKiB;  // crossRingMinBytes with 2 hosts

}  // namespace

const Algorithm& selectAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology,
                                 const AlgorithmOverrides& overrides) {
  if (kind == CollectiveKind::kControl || kind == CollectiveKind::kSend ||
      kind == CollectiveKind::kRecv) {
    throw Error(ErrorCode::kInternal, std::string("smddp: no algorithm is selected for ") +
                                          toString(kind) + " (not a collective)");
  }
  // A name lookup: the communicator derives its choice once per run of identical calls.
  const auto it = overrides.find(kind);
  const bool chosen = it != overrides.end();
  const char* name = chosen ? it->second.c_str() : defaultName(kind, bytes, topology);
  // A name from SMDDP_ALGORITHMS that does not fit is the user's mistake; a default that does
  // not is ours.
  const ErrorCode misfit = chosen ? ErrorCode::kInvalidArgument : ErrorCode::kInternal;
  const Algorithm* algorithm = findAlgorithm(kind, name);
  if (algorithm == nullptr) {
    throw Error(misfit,
                "smddp: no " + std::string(toString(kind)) + " algorithm named \"" + name + "\"");
  }
  if (algorithm->needsArena() && !topology.arena) {
    throw Error(misfit,
                "smddp: " + std::string(toString(kind)) + " algorithm \"" + name +
                    "\" needs the shared-memory arena, which this communicator does not have "
                    "(ranks on several hosts, SMDDP_ARENA=0, or a provider other than shm)");
  }
  if (algorithm->needs.hostArenas && !topology.hostArenas &&
      !(topology.unevenHosts && algorithm->needs.unevenHosts)) {
    throw Error(misfit, "smddp: " + std::string(toString(kind)) + " algorithm \"" + name +
                            "\" needs ranks on several hosts, the same number (>= 2) on each, "
                            "with the shared-memory arena on every host; this communicator has " +
                            std::to_string(topology.ranks) + " rank(s) on " +
                            std::to_string(topology.hosts) + " host(s)" +
                            (topology.unevenHosts ? ", not the same number on each" : ""));
  }
  return *algorithm;
}

size_t crossRingMinBytes(int hosts) {
  if (hosts <= 2) return kCrossRingBytes;
  const bool powerOfTwo = (hosts & (hosts - 1)) == 0;
  const size_t rdSteps = static_cast<size_t>(patterns::rdSteps(hosts)) + (powerOfTwo ? 0 : 2);
  const size_t ringSteps = 2 * static_cast<size_t>(hosts - 1);
  return kCrossRingBytes / 2 * ringSteps / rdSteps;
}

}  // namespace smddp::algo
