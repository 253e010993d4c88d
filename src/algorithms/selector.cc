// selectAlgorithm: a pure function of (collective, bytes, topology, overrides).
//
// bytes is args.bytes(): the whole buffer for all_reduce and broadcast, one rank's block for
// all_gather. Thresholds are PROVISIONAL (set by the alpha-beta model, not yet measured; bench/
// will replace them with measured crossovers):
//   all_reduce: recursive_doubling up to 64 KiB, ring above. Recursive doubling costs
//     log2(n) (alpha + bytes beta) against ring's 2(n-1) alpha + 2(n-1)/n bytes beta, so it wins
//     while latency dominates. With 2 ranks both move the same bytes (bytes each way); ring then
//     only saves half the reduction work and pipelines it, which pays off for large buffers too,
//     so the same threshold applies.
//   broadcast: binomial up to 64 KiB or with 2 ranks (one hop: a chain cannot pipeline anything),
//     chain above: log2(n) whole-buffer hops against (n - 2 + segments) segment hops.
//   all_gather: bruck while the gathered size (bytes x ranks) is at most 64 KiB: log2(n) messages
//     plus one local copy; ring above, which writes straight into the output.
//   barrier: dissemination.
// With the shared-memory arena (every rank on one host, topology.arena), the arena algorithms
// win at every size (bench/ and docs/PERF.md): no message, no matching, one copy in and out:
//   all_reduce: shm_direct up to 16 KiB (one synchronisation, every rank reduces everything),
//     shm_split above (reduction split n ways, two synchronisations per chunk);
//   broadcast: shm_eager up to topology.eagerBytes (SMDDP_SHM_EAGER_BYTES), shm above;
//   all_gather, barrier: shm.
// topology.hosts is not used yet: it is where a hierarchical all_reduce will be chosen.
#include "algorithms/registry.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

constexpr size_t kAllReduceSmallBytes = 64 * 1024;
constexpr size_t kBroadcastSmallBytes = 64 * 1024;
constexpr size_t kAllGatherSmallTotalBytes = 64 * 1024;
constexpr size_t kShmDirectBytes = 16 * 1024;

// The registry's entry of a default choice, looked up by name once (the selector runs per call).
const Algorithm& builtIn(CollectiveKind kind, const char* name) {
  const Algorithm* algorithm = findAlgorithm(kind, name);
  if (algorithm == nullptr) {
    throw Error(ErrorCode::kInternal, "smddp: no built-in " + std::string(toString(kind)) +
                                          " algorithm named \"" + name + "\"");
  }
  return *algorithm;
}

// Every default choice, looked up once (one guard for the lot; the selector runs per call).
struct Defaults {
  using K = CollectiveKind;
  const Algorithm& shmDirect = builtIn(K::kAllReduce, "shm_direct");
  const Algorithm& shmSplit = builtIn(K::kAllReduce, "shm_split");
  const Algorithm& shmBroadcast = builtIn(K::kBroadcast, "shm");
  const Algorithm& shmEager = builtIn(K::kBroadcast, "shm_eager");
  const Algorithm& shmAllGather = builtIn(K::kAllGather, "shm");
  const Algorithm& shmBarrier = builtIn(K::kBarrier, "shm");
  const Algorithm& recursiveDoubling = builtIn(K::kAllReduce, "recursive_doubling");
  const Algorithm& allReduceRing = builtIn(K::kAllReduce, "ring");
  const Algorithm& binomial = builtIn(K::kBroadcast, "binomial");
  const Algorithm& chain = builtIn(K::kBroadcast, "chain");
  const Algorithm& bruck = builtIn(K::kAllGather, "bruck");
  const Algorithm& allGatherRing = builtIn(K::kAllGather, "ring");
  const Algorithm& dissemination = builtIn(K::kBarrier, "dissemination");
};

const Algorithm& defaultAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology) {
  using K = CollectiveKind;
  static const Defaults d;
  const size_t ranks = topology.ranks > 0 ? static_cast<size_t>(topology.ranks) : 1;
  switch (kind) {
    case K::kAllReduce:
      if (topology.arena) return bytes <= kShmDirectBytes ? d.shmDirect : d.shmSplit;
      return bytes <= kAllReduceSmallBytes ? d.recursiveDoubling : d.allReduceRing;
    case K::kBroadcast:
      if (topology.arena) {
        return bytes > 0 && bytes <= topology.eagerBytes ? d.shmEager : d.shmBroadcast;
      }
      return bytes <= kBroadcastSmallBytes || ranks <= 2 ? d.binomial : d.chain;
    case K::kAllGather:
      if (topology.arena) return d.shmAllGather;
      return bytes * ranks <= kAllGatherSmallTotalBytes ? d.bruck : d.allGatherRing;
    case K::kBarrier:
    case K::kControl:
      break;
  }
  return topology.arena ? d.shmBarrier : d.dissemination;
}

}  // namespace

const Algorithm& selectAlgorithm(CollectiveKind kind, size_t bytes, const Topology& topology,
                                 const AlgorithmOverrides& overrides) {
  if (kind == CollectiveKind::kControl) {
    throw Error(ErrorCode::kInternal, "smddp: no algorithm is selected for control messages");
  }
  const auto it = overrides.find(kind);
  if (it == overrides.end()) return defaultAlgorithm(kind, bytes, topology);
  const Algorithm* algorithm = findAlgorithm(kind, it->second.c_str());
  if (algorithm == nullptr) {
    throw Error(ErrorCode::kInvalidArgument, "smddp: no " + std::string(toString(kind)) +
                                                 " algorithm named \"" + it->second + "\"");
  }
  if (algorithm->needsArena() && !topology.arena) {
    throw Error(ErrorCode::kInvalidArgument,
                "smddp: " + std::string(toString(kind)) + " algorithm \"" + it->second +
                    "\" needs the shared-memory arena, which this communicator does not have "
                    "(ranks on several hosts, SMDDP_SHM=0, or a provider other than shm)");
  }
  return *algorithm;
}

}  // namespace smddp::algo
