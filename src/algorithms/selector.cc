// SPDX-License-Identifier: Apache-2.0
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
//   reduce_scatter: ring (a pass, as in ring all_reduce); reduce: binomial tree; gather,
//   scatter: linear; all_to_all (equal and uneven): pairwise exchange.
//   barrier: dissemination.
// With the shared-memory arena (every rank on one host, topology.arena), the arena algorithms
// win at every size (bench/ and docs/PERF.md): no message, no matching, one copy in and out:
//   all_reduce: arena_direct up to 16 KiB (one synchronisation, every rank reduces everything),
//     arena_split above (reduction split n ways, two synchronisations per chunk);
//   broadcast: arena_eager up to topology.eagerBytes (SMDDP_ARENA_EAGER_BYTES), arena above;
//   all_gather, barrier, reduce_scatter, reduce, gather, scatter, all_to_allv: arena;
//   with shareable tensor memory (topology.pool), all_reduce, broadcast, all_gather and
//     reduce_scatter from 1 MiB (the largest buffer): pooled, in place when every rank's tensors
//     are in it, else the arena form above;
//   all_to_all: arena for blocks below 64 KiB, pairwise above: libfabric's shm moves a large
//     message with one copy (process_vm_readv) where the arena takes two. Measured with
//     alltoall_perf, 2 ranks, -z 1, two interleaved runs on a 2-core VM: 128 KiB blocks 31-43 us
//     pairwise against 43-56 us arena, 512 KiB 96-133 against 116-214, 2 MiB 333-478 against
//     399-842, 8 MiB 2.9-3.2 ms against 3.4-3.9 ms; 32 KiB blocks were a toss-up (6-17 us).
// Across hosts with an arena on each (topology.hostArenas: the same number >= 2 of ranks on every
// host), all_reduce is hierarchical (hierarchical_all_reduce.cc): hier_leader up to 16 KiB (two
// arena synchronisations around ceil(log2 hosts) network exchanges of one rank per host: on the
// testbed (docs/PERF.md) 0.5x hier_direct's time, which sends from every rank of a host and so
// puts L x the messages and bytes on each link), hier_split above (each host's link carries the
// buffer once each way instead of ranks-per-host times); broadcast hier_leader up to 16 KiB,
// all_gather and reduce_scatter hier_leader up to 64 KiB for all n blocks (one sender per host:
// on the testbed 12-18 us against hier's 19-21 for broadcasts to 512 B, 24-42 us against 46-49
// for all_gathers and 20-27 against 41-50 for reduce_scatters to 4 KiB, level from 16 KiB),
// hier above; barrier, reduce, gather and scatter hier (hierarchical_leader.cc,
// hierarchical_collectives.cc, hierarchical_rooted.cc: the flat algorithms would run their
// intra-host steps over the network provider, and their network steps among n ranks where these
// run among the hosts). all_to_all: hier_leader while a rank's whole buffer (n blocks) is at
// most 16 KiB (one sender per host: on the testbed 17-24 us against hier's 32-38 for buffers to
// 512 B, 33-35 against 51 at 4 KiB, equal at 16 KiB, where the link rules), hier for blocks up to
// 16 KiB (H-1 network messages per rank instead of (H-1) L), pairwise above (no copies: equal to
// hier at 16 KiB blocks, 538 against 552 us for hier_leader at 64 KiB buffers); all_to_allv
// pairwise (its sizes differ per rank, so no size can choose alike on every rank;
// SMDDP_ALGO=all_to_all:hier selects hier for both forms). Hosts with different numbers of ranks
// (topology.unevenHosts), measured on the testbed with hosts of 3, 2 and 1 ranks (docs/PERF.md):
// all_reduce hier_leader at every size (a host's link carries 2(H-1)/H of the buffer each way
// where a flat ring carries 2(n-1)/n: 1.17-1.20x the flat busbw from 1 MiB); broadcast hier_leader
// above 16 KiB (0.83-0.93x the flat time from 256 KiB; below, the flat binomial tree is up to 2x
// faster than a leader's network step plus the arena hand-out); all_gather and reduce_scatter
// hier_leader up to 128 KiB over all ranks (0.42-0.94x the flat time to 64 KiB), the flat ring
// above (where the link rules the flat ring's busiest host carries no more than the leaders' and
// the leader's copies and reductions cost 3-28 %); all_to_all hier_leader up to 64 KiB over all
// ranks (0.41-0.70x the flat time to 16 KiB, equal at 64 KiB, 1.12-1.25x above), pairwise above;
// barrier, reduce, gather and scatter hier (the root and the other hosts' leaders carry);
// all_to_allv pairwise (its sizes are per rank).
#include "algorithms/patterns/recursive_doubling.h"
#include "algorithms/registry.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

constexpr size_t kAllReduceSmallBytes = 64 * 1024;
constexpr size_t kBroadcastSmallBytes = 64 * 1024;
constexpr size_t kAllGatherSmallTotalBytes = 64 * 1024;
constexpr size_t kArenaDirectBytes = 16 * 1024;
constexpr size_t kAllToAllArenaBlockBytes = 64 * 1024;
constexpr size_t kCrossRingBytes = 64 * 1024;  // crossRingMinBytes with 2 hosts
constexpr size_t kHierLeaderBytes = 16 * 1024;
constexpr size_t kAllToAllHierBlockBytes = 16 * 1024;
constexpr size_t kAllToAllHierLeaderTotalBytes = 16 * 1024;
constexpr size_t kUnevenLeaderTotalBytes = 128 * 1024;
constexpr size_t kUnevenAllToAllLeaderTotalBytes = 64 * 1024;

// The default algorithm's name.
const char* defaultName(CollectiveKind kind, size_t bytes, const Topology& topology) {
  using K = CollectiveKind;
  const size_t ranks = topology.ranks > 0 ? static_cast<size_t>(topology.ranks) : 1;
  switch (kind) {
    case K::kAllReduce:
      if (topology.hostArenas) return bytes <= kHierLeaderBytes ? "hier_leader" : "hier_split";
      if (topology.unevenHosts) return "hier_leader";
      if (topology.arena && topology.pool && bytes >= kInPlaceMinBytes) return "pooled";
      if (topology.arena) return bytes <= kArenaDirectBytes ? "arena_direct" : "arena_split";
      return bytes <= kAllReduceSmallBytes ? "recursive_doubling" : "ring";
    case K::kBroadcast:
      if (topology.hostArenas) return bytes <= kHierLeaderBytes ? "hier_leader" : "hier";
      if (topology.unevenHosts && bytes > kHierLeaderBytes) return "hier_leader";
      if (topology.arena && topology.pool && bytes >= kInPlaceMinBytes) return "pooled";
      if (topology.arena)
        return bytes > 0 && bytes <= topology.eagerBytes ? "arena_eager" : "arena";
      return bytes <= kBroadcastSmallBytes || ranks <= 2 ? "binomial" : "chain";
    case K::kAllGather:
      if (topology.hostArenas) {
        return bytes * ranks <= kAllGatherSmallTotalBytes ? "hier_leader" : "hier";
      }
      if (topology.unevenHosts) {
        return bytes * ranks <= kUnevenLeaderTotalBytes ? "hier_leader" : "ring";
      }
      if (topology.arena && topology.pool && bytes * ranks >= kInPlaceMinBytes) return "pooled";
      if (topology.arena) return "arena";
      return bytes * ranks <= kAllGatherSmallTotalBytes ? "bruck" : "ring";
    case K::kReduceScatter:
      if (topology.hostArenas) {
        return bytes * ranks <= kAllGatherSmallTotalBytes ? "hier_leader" : "hier";
      }
      if (topology.unevenHosts) {
        return bytes * ranks <= kUnevenLeaderTotalBytes ? "hier_leader" : "ring";
      }
      if (topology.arena && topology.pool && bytes * ranks >= kInPlaceMinBytes) return "pooled";
      return topology.arena ? "arena" : "ring";
    case K::kReduce:
      if (topology.hostArenas || topology.unevenHosts) return "hier";
      return topology.arena ? "arena" : "binomial";
    case K::kGather:
    case K::kScatter:
      if (topology.hostArenas || topology.unevenHosts) return "hier";
      return topology.arena ? "arena" : "linear";
    case K::kAllToAll:
      if (topology.hostArenas) {
        if (bytes * ranks <= kAllToAllHierLeaderTotalBytes) return "hier_leader";
        return bytes <= kAllToAllHierBlockBytes ? "hier" : "pairwise";
      }
      if (topology.unevenHosts) {
        return bytes * ranks <= kUnevenAllToAllLeaderTotalBytes ? "hier_leader" : "pairwise";
      }
      return topology.arena && bytes < kAllToAllArenaBlockBytes ? "arena" : "pairwise";
    case K::kAllToAllV:  // its sizes are per rank: no size to choose by
      return topology.arena ? "arena" : "pairwise";
    case K::kBarrier:
      if (topology.hostArenas || topology.unevenHosts) return "hier";
      break;
    case K::kControl:
    case K::kSend:
    case K::kRecv:
      break;
  }
  return topology.arena ? "arena" : "dissemination";
}

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
