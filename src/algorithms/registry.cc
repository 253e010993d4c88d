// SPDX-License-Identifier: Apache-2.0
// The table of every algorithm, and the parser of SMDDP_ALGO overrides. Names here are the ones
// users type; the table order is fixed (it is what SMDDP_DEBUG=INFO lists).
#include "algorithms/registry.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>

#include "algorithms/algorithms.h"
#include "algorithms/arena/collectives.h"
#include "smddp/error.h"

namespace smddp::algo {
namespace {

using K = CollectiveKind;
constexpr arena::Use kSlots = arena::Use::kSlots;
constexpr arena::Use kEager = arena::Use::kEager;

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const std::vector<std::pair<const char*, CollectiveKind>>& collectiveNames() {
  static const std::vector<std::pair<const char*, CollectiveKind>> names = {
      {"all_reduce", K::kAllReduce},
      {"allreduce", K::kAllReduce},
      {"broadcast", K::kBroadcast},
      {"all_gather", K::kAllGather},
      {"allgather", K::kAllGather},
      {"barrier", K::kBarrier},
      {"reduce_scatter", K::kReduceScatter},
      {"reducescatter", K::kReduceScatter},
      {"reduce", K::kReduce},
      {"gather", K::kGather},
      {"scatter", K::kScatter},
      {"all_to_all", K::kAllToAll},
      {"alltoall", K::kAllToAll}};
  return names;
}

// The arena algorithms' names before the arena had its own ("shm" was also libfabric's provider),
// still accepted in SMDDP_ALGO.
std::string currentName(const std::string& name) {
  static const std::map<std::string, std::string> former = {{"shm", "arena"},
                                                            {"shm_direct", "arena_direct"},
                                                            {"shm_split", "arena_split"},
                                                            {"shm_eager", "arena_eager"}};
  const auto it = former.find(name);
  return it == former.end() ? name : it->second;
}

std::string algorithmNames(CollectiveKind kind) {
  std::string list;
  for (const Algorithm& a : registry()) {
    if (a.kind == kind) list += (list.empty() ? "" : ", ") + std::string(a.name);
  }
  return list;
}

[[noreturn]] void badSpec(const std::string& spec, const std::string& entry,
                          const std::string& why) {
  throw Error(ErrorCode::kInvalidArgument,
              "smddp: SMDDP_ALGO=\"" + spec + "\": entry \"" + entry + "\": " + why);
}

CollectiveKind parseCollective(const std::string& spec, const std::string& entry,
                               const std::string& name) {
  for (const auto& [text, kind] : collectiveNames()) {
    if (name == text) return kind;
  }
  badSpec(spec, entry,
          "unknown collective \"" + name +
              "\"; valid: all_reduce (allreduce), broadcast, all_gather "
              "(allgather), barrier, reduce_scatter (reducescatter), reduce, gather, scatter, "
              "all_to_all (alltoall)");
}

}  // namespace

const std::vector<Algorithm>& registry() {
  static const std::vector<Algorithm> algorithms{
      {K::kAllReduce, "recursive_doubling",
       "log2(n) exchanges of the whole buffer, extra ranks folded in; for small messages",
       allReduceRecursiveDoubling},
      {K::kAllReduce, "ring",
       "segmented ring reduce-scatter + all-gather, 2(n-1)/n x bytes per rank; for large messages",
       allReduceRing},
      {K::kAllReduce, "hier_direct",
       "several hosts: each host reduces in its arena, every rank exchanges the whole buffer with "
       "its counterparts on the other hosts; for small messages",
       allReduceHierDirect, arena::Use::kNone, true},
      {K::kAllReduce, "hier_leader",
       "several hosts: each host reduces in its arena, one rank per host all_reduces the buffer "
       "with the other hosts' and hands the result back through the arena; for small messages",
       allReduceHierLeader, arena::Use::kNone, true, true},
      {K::kAllReduce, "hier_split",
       "several hosts: arena reduce-scatter over the host's ranks, each rank all_reduces its "
       "slice with its counterparts on the other hosts, arena all-gather",
       allReduceHierSplit, arena::Use::kNone, true},
      {K::kBroadcast, "hier",
       "several hosts: arena copy on the root's host, each rank broadcasts its slice to its "
       "counterparts on the other hosts, arena all-gather there",
       broadcastHier, arena::Use::kNone, true},
      {K::kBroadcast, "hier_leader",
       "several hosts: the root's counterparts (or leaders) on the other hosts get the whole "
       "buffer, each hands it to its host through the arena; for small messages",
       broadcastHierLeader, arena::Use::kNone, true, true},
      {K::kAllGather, "hier_leader",
       "several hosts: one rank per host gathers its host's blocks through the arena, "
       "all_gathers them with the other hosts' and hands all back; for small messages",
       allGatherHierLeader, arena::Use::kNone, true, true},
      {K::kAllGather, "hier",
       "several hosts: each rank all_gathers its block with its counterparts on the other hosts, "
       "then the host's ranks exchange what they received through the arena",
       allGatherHier, arena::Use::kNone, true},
      {K::kReduceScatter, "hier_leader",
       "several hosts: one rank per host reduces its host's inputs through the arena, "
       "reduce-scatters them with the other hosts' and hands each rank its block; for small "
       "messages",
       reduceScatterHierLeader, arena::Use::kNone, true, true},
      {K::kReduceScatter, "hier",
       "several hosts: the host's ranks reduce each other's blocks through the arena, each rank "
       "reduce-scatters its partial blocks with its counterparts on the other hosts",
       reduceScatterHier, arena::Use::kNone, true},
      {K::kBarrier, "hier",
       "several hosts: the host's ranks meet in the arena, one rank per host runs the "
       "dissemination barrier with the other hosts', then releases the others",
       barrierHier, arena::Use::kNone, true, true},
      {K::kReduce, "hier",
       "several hosts: the root's counterpart (or leader) on each host reduces its host through "
       "the arena, the counterparts reduce to the root (binomial)",
       reduceHier, arena::Use::kNone, true, true},
      {K::kGather, "hier",
       "several hosts: the root's counterpart (or leader) on each host packs its host's blocks "
       "through the arena and sends them to the root",
       gatherHier, arena::Use::kNone, true, true},
      {K::kScatter, "hier",
       "several hosts: the root sends each host's blocks to the root's counterpart (or leader) "
       "there, which hands them out through the arena",
       scatterHier, arena::Use::kNone, true, true},
      {K::kBroadcast, "binomial", "binomial tree, ceil(log2 n) rounds of the whole buffer",
       broadcastBinomial},
      {K::kBroadcast, "chain", "segmented pipelined chain, bytes once per rank; for large messages",
       broadcastChain},
      {K::kAllGather, "bruck", "ceil(log2 n) rounds through scratch, any n; for small messages",
       allGatherBruck},
      {K::kAllGather, "ring", "segmented ring straight into the output blocks; for large messages",
       allGatherRing},
      {K::kBarrier, "dissemination", "ceil(log2 n) rounds of zero-byte messages",
       barrierDissemination},
      {K::kAllReduce, "arena_direct",
       "shared memory, one host: every rank reduces all n inputs; for small messages",
       arena::allReduceDirect, kSlots},
      {K::kAllReduce, "arena_split",
       "shared memory, one host: rank r reduces slice r of every input, all copy all slices",
       arena::allReduceSplit, kSlots},
      {K::kBroadcast, "arena", "shared memory, one host: root copies in, the others copy out",
       arena::broadcast, kSlots},
      {K::kBroadcast, "arena_eager",
       "shared memory, one host: through a deep ring, so the root runs ahead; small messages",
       arena::broadcastEager, kEager},
      {K::kAllGather, "arena",
       "shared memory, one host: each copies its block in, all the rest out", arena::allGather,
       kSlots},
      {K::kBarrier, "arena", "shared memory, one host: one flag per rank", arena::barrier, kSlots},
      {K::kAllReduce, "pooled",
       "shared memory, one host, tensors in the ranks' shareable memory: rank r reduces slice r "
       "of every input and writes it into every output, no copies (else arena_split)",
       arena::allReducePooled, kSlots},
      {K::kAllGather, "pooled",
       "shared memory, one host, inputs in the ranks' shareable memory: each copies every "
       "peer's block straight into its output (else arena)",
       arena::allGatherPooled, kSlots},
      {K::kReduceScatter, "pooled",
       "shared memory, one host, inputs in the ranks' shareable memory: each reduces its block "
       "straight from every input (else arena)",
       arena::reduceScatterPooled, kSlots},
      {K::kBroadcast, "pooled",
       "shared memory, one host, the root's input in its shareable memory: each copies it "
       "straight (else arena)",
       arena::broadcastPooled, kSlots},
      {K::kReduceScatter, "ring",
       "segmented ring pass, (n-1) blocks sent and reduced per rank; partials in scratch",
       reduceScatterRing},
      {K::kReduceScatter, "arena",
       "shared memory, one host: all copy their input in, each reduces its block of all n",
       arena::reduceScatter, kSlots},
      {K::kReduce, "binomial",
       "binomial tree towards the root, ceil(log2 n) rounds of the whole buffer", reduceBinomial},
      {K::kReduce, "arena",
       "shared memory, one host: all copy their input in, the root reduces the n slots",
       arena::reduce, kSlots},
      {K::kGather, "linear", "the root receives every block straight into place, one round",
       gatherLinear},
      {K::kGather, "arena", "shared memory, one host: all copy in, the root copies all out",
       arena::gather, kSlots},
      {K::kScatter, "linear", "the root sends every block straight from its input, one round",
       scatterLinear},
      {K::kScatter, "arena", "shared memory, one host: the root copies all in, each copies out",
       arena::scatter, kSlots},
      {K::kAllToAll, "pairwise",
       "step s: send to rank + s, receive from rank - s; 8 steps in flight, no copies",
       allToAllPairwise},
      {K::kAllToAll, "arena",
       "shared memory, one host: all copy every piece in, each copies its pieces out",
       arena::allToAll, kSlots},
      {K::kAllToAllV, "pairwise", "as all_to_all's pairwise, with each pair's own counts",
       allToAllPairwise},
      {K::kAllToAllV, "arena",
       "as all_to_all's arena, after one use that checks and agrees on the piece sizes",
       arena::allToAll, kSlots},
      {K::kAllToAll, "hier",
       "several hosts: each rank gathers through the arena its host's pieces for its "
       "counterparts, then one message per counterpart host; H-1 network messages per rank",
       allToAllHier, arena::Use::kNone, true},
      {K::kAllToAll, "hier_leader",
       "several hosts: one rank per host gathers its host's inputs through the arena, sends each "
       "other host's leader one message and hands the outputs back; H-1 messages per host",
       allToAllHierLeader, arena::Use::kNone, true, true},
      {K::kAllToAllV, "hier",
       "as all_to_all's hier, after the host's ranks share their piece sizes in the arena",
       allToAllHier, arena::Use::kNone, true},
  };
  return algorithms;
}

void runCollective(const Algorithm& algorithm, Exec& exec, const CollectiveArgs& args) {
  arena::settleDeferred(exec, algorithm.arena);
  algorithm.run(exec, args);
  exec.waitAll();
}

const Algorithm* findAlgorithm(CollectiveKind kind, const char* name) {
  for (const Algorithm& a : registry()) {
    if (a.kind == kind && std::strcmp(name, a.name) == 0) return &a;
  }
  return nullptr;
}

// "allreduce:ring; broadcast : chain" -> {all_reduce: ring, broadcast: chain}. Entries are
// separated by ';' (',' accepted too); empty entries are ignored; names are case-insensitive.
AlgorithmOverrides parseAlgorithmOverrides(const std::string& spec) {
  AlgorithmOverrides overrides;
  std::string normalized = spec;
  std::replace(normalized.begin(), normalized.end(), ',', ';');
  size_t start = 0;
  while (start <= normalized.size()) {
    size_t stop = normalized.find(';', start);
    if (stop == std::string::npos) stop = normalized.size();
    const std::string entry = trim(normalized.substr(start, stop - start));
    start = stop + 1;
    if (entry.empty()) continue;
    const size_t colon = entry.find(':');
    if (colon == std::string::npos) badSpec(spec, entry, "expected collective:algorithm");
    const CollectiveKind kind = parseCollective(spec, entry, lower(trim(entry.substr(0, colon))));
    const std::string name = currentName(lower(trim(entry.substr(colon + 1))));
    if (findAlgorithm(kind, name.c_str()) == nullptr) {
      badSpec(spec, entry,
              "unknown " + std::string(toString(kind)) + " algorithm \"" + name +
                  "\"; valid: " + algorithmNames(kind));
    }
    const auto [it, fresh] = overrides.emplace(kind, name);
    if (!fresh && it->second != name) {
      badSpec(spec, entry, std::string(toString(kind)) + " is already set to " + it->second);
    }
    // all_to_all names both forms, equal and uneven: they have the same algorithms.
    if (kind == K::kAllToAll) overrides[K::kAllToAllV] = name;
  }
  return overrides;
}

}  // namespace smddp::algo
