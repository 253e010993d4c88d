// SPDX-License-Identifier: Apache-2.0
// The algorithms of each collective, one table per collective. Names are the ones users type in
// SMDDP_ALGO; a table's order is the order SMDDP_ALGO's errors list its names in. Each entry
// says what it needs by name (registry.h: Requirements); selectAlgorithm checks those needs and
// selector.cc picks among a table's entries.
#include <iterator>

#include "algorithms/algorithms.h"
#include "algorithms/arena/collectives.h"
#include "algorithms/registry.h"

namespace smddp::algo {
namespace {

using K = CollectiveKind;
constexpr arena::Use kSlots = arena::Use::kSlots;
constexpr arena::Use kEager = arena::Use::kEager;

// all_reduce
const AlgorithmEntry kAllReduce[] = {
    {"recursive_doubling",
     "log2(n) exchanges of the whole buffer, extra ranks folded in; for small messages",
     allReduceRecursiveDoubling},
    {"ring",
     "segmented ring reduce-scatter + all-gather, 2(n-1)/n x bytes per rank; for large messages",
     allReduceRing},
    {"hier_direct",
     "several hosts: each host reduces in its arena, every rank exchanges the whole buffer with "
     "its counterparts on the other hosts; for small messages",
     allReduceHierDirect,
     {.hostArenas = true}},
    {"hier_leader",
     "several hosts: each host reduces in its arena, one rank per host all_reduces the buffer with "
     "the other hosts' and hands the result back through the arena; for small messages",
     allReduceHierLeader,
     {.hostArenas = true, .unevenHosts = true}},
    {"hier_split",
     "several hosts: arena reduce-scatter over the host's ranks, each rank all_reduces its slice "
     "with its counterparts on the other hosts, arena all-gather",
     allReduceHierSplit,
     {.hostArenas = true}},
    {"arena_direct",
     "shared memory, one host: every rank reduces all n inputs; for small messages",
     arena::allReduceDirect,
     {.arena = kSlots}},
    {"arena_split",
     "shared memory, one host: rank r reduces slice r of every input, all copy all slices",
     arena::allReduceSplit,
     {.arena = kSlots}},
    {"pooled",
     "shared memory, one host, tensors in the ranks' shareable memory: rank r reduces slice r of "
     "every input and writes it into every output, no copies (else arena_split)",
     arena::allReducePooled,
     {.arena = kSlots}},
    {"fixed_order",
     "rank b reduces block b of every input in rank order, then all-gather: the same bits on any "
     "layout (SMDDP_DETERMINISTIC), 2(n-1)/n x bytes per rank",
     allReduceFixedOrder},
};

// broadcast
const AlgorithmEntry kBroadcast[] = {
    {"hier",
     "several hosts: arena copy on the root's host, each rank broadcasts its slice to its "
     "counterparts on the other hosts, arena all-gather there",
     broadcastHier,
     {.hostArenas = true}},
    {"hier_leader",
     "several hosts: the root's counterparts (or leaders) on the other hosts get the whole buffer, "
     "each hands it to its host through the arena; for small messages",
     broadcastHierLeader,
     {.hostArenas = true, .unevenHosts = true}},
    {"binomial", "binomial tree, ceil(log2 n) rounds of the whole buffer", broadcastBinomial},
    {"chain", "segmented pipelined chain, bytes once per rank; for large messages", broadcastChain},
    {"arena",
     "shared memory, one host: root copies in, the others copy out",
     arena::broadcast,
     {.arena = kSlots}},
    {"arena_eager",
     "shared memory, one host: through a deep ring, so the root runs ahead; small messages",
     arena::broadcastEager,
     {.arena = kEager}},
    {"pooled",
     "shared memory, one host, the root's input in its shareable memory: each copies it straight "
     "(else arena)",
     arena::broadcastPooled,
     {.arena = kSlots}},
};

// all_gather
const AlgorithmEntry kAllGather[] = {
    {"hier_leader",
     "several hosts: one rank per host gathers its host's blocks through the arena, all_gathers "
     "them with the other hosts' and hands all back; for small messages",
     allGatherHierLeader,
     {.hostArenas = true, .unevenHosts = true}},
    {"hier",
     "several hosts: each rank all_gathers its block with its counterparts on the other hosts, "
     "then the host's ranks exchange what they received through the arena",
     allGatherHier,
     {.hostArenas = true}},
    {"bruck", "ceil(log2 n) rounds through scratch, any n; for small messages", allGatherBruck},
    {"ring", "segmented ring straight into the output blocks; for large messages", allGatherRing},
    {"arena",
     "shared memory, one host: each copies its block in, all the rest out",
     arena::allGather,
     {.arena = kSlots}},
    {"pooled",
     "shared memory, one host, inputs in the ranks' shareable memory: each copies every peer's "
     "block straight into its output (else arena)",
     arena::allGatherPooled,
     {.arena = kSlots}},
};

// barrier
const AlgorithmEntry kBarrier[] = {
    {"hier",
     "several hosts: the host's ranks meet in the arena, one rank per host runs the dissemination "
     "barrier with the other hosts', then releases the others",
     barrierHier,
     {.hostArenas = true, .unevenHosts = true}},
    {"dissemination", "ceil(log2 n) rounds of zero-byte messages", barrierDissemination},
    {"arena", "shared memory, one host: one flag per rank", arena::barrier, {.arena = kSlots}},
};

// reduce_scatter
const AlgorithmEntry kReduceScatter[] = {
    {"hier_leader",
     "several hosts: one rank per host reduces its host's inputs through the arena, "
     "reduce-scatters them with the other hosts' and hands each rank its block; for small messages",
     reduceScatterHierLeader,
     {.hostArenas = true, .unevenHosts = true}},
    {"hier",
     "several hosts: the host's ranks reduce each other's blocks through the arena, each rank "
     "reduce-scatters its partial blocks with its counterparts on the other hosts",
     reduceScatterHier,
     {.hostArenas = true}},
    {"pooled",
     "shared memory, one host, inputs in the ranks' shareable memory: each reduces its block "
     "straight from every input (else arena)",
     arena::reduceScatterPooled,
     {.arena = kSlots}},
    {"ring", "segmented ring pass, (n-1) blocks sent and reduced per rank; partials in scratch",
     reduceScatterRing},
    {"arena",
     "shared memory, one host: all copy their input in, each reduces its block of all n",
     arena::reduceScatter,
     {.arena = kSlots}},
    {"fixed_order",
     "rank b gathers block b of every input and reduces it in rank order: the same bits on any "
     "layout (SMDDP_DETERMINISTIC)",
     reduceScatterFixedOrder},
};

// reduce
const AlgorithmEntry kReduce[] = {
    {"hier",
     "several hosts: the root's counterpart (or leader) on each host reduces its host through the "
     "arena, the counterparts reduce to the root (binomial)",
     reduceHier,
     {.hostArenas = true, .unevenHosts = true}},
    {"binomial", "binomial tree towards the root, ceil(log2 n) rounds of the whole buffer",
     reduceBinomial},
    {"arena",
     "shared memory, one host: all copy their input in, the root reduces the n slots",
     arena::reduce,
     {.arena = kSlots}},
    {"fixed_order",
     "rank b reduces block b of every input in rank order and sends it to the root: the same "
     "bits on any layout (SMDDP_DETERMINISTIC)",
     reduceFixedOrder},
};

// gather
const AlgorithmEntry kGather[] = {
    {"hier",
     "several hosts: the root's counterpart (or leader) on each host packs its host's blocks "
     "through the arena and sends them to the root",
     gatherHier,
     {.hostArenas = true, .unevenHosts = true}},
    {"linear", "the root receives every block straight into place, one round", gatherLinear},
    {"arena",
     "shared memory, one host: all copy in, the root copies all out",
     arena::gather,
     {.arena = kSlots}},
};

// scatter
const AlgorithmEntry kScatter[] = {
    {"hier",
     "several hosts: the root sends each host's blocks to the root's counterpart (or leader) "
     "there, which hands them out through the arena",
     scatterHier,
     {.hostArenas = true, .unevenHosts = true}},
    {"linear", "the root sends every block straight from its input, one round", scatterLinear},
    {"arena",
     "shared memory, one host: the root copies all in, each copies out",
     arena::scatter,
     {.arena = kSlots}},
};

// all_to_all
const AlgorithmEntry kAllToAll[] = {
    {"pairwise", "step s: send to rank + s, receive from rank - s; 8 steps in flight, no copies",
     allToAllPairwise},
    {"arena",
     "shared memory, one host: all copy every piece in, each copies its pieces out",
     arena::allToAll,
     {.arena = kSlots}},
    {"hier",
     "several hosts: each rank gathers through the arena its host's pieces for its counterparts, "
     "then one message per counterpart host; H-1 network messages per rank",
     allToAllHier,
     {.hostArenas = true}},
    {"hier_leader",
     "several hosts: one rank per host gathers its host's inputs through the arena, sends each "
     "other host's leader one message and hands the outputs back; H-1 messages per host",
     allToAllHierLeader,
     {.hostArenas = true, .unevenHosts = true}},
};

// all_to_allv
const AlgorithmEntry kAllToAllV[] = {
    {"pairwise", "as all_to_all's pairwise, with each pair's own counts", allToAllPairwise},
    {"arena",
     "as all_to_all's arena, after one use that checks and agrees on the piece sizes",
     arena::allToAll,
     {.arena = kSlots}},
    {"hier",
     "as all_to_all's hier, after the host's ranks share their piece sizes in the arena",
     allToAllHier,
     {.hostArenas = true}},
};
struct Table {
  CollectiveKind kind;
  const AlgorithmEntry* first;
  const AlgorithmEntry* last;
};

// The collectives' tables in the order registry() concatenates them.
const Table kTables[] = {
    {K::kAllReduce, std::begin(kAllReduce), std::end(kAllReduce)},
    {K::kBroadcast, std::begin(kBroadcast), std::end(kBroadcast)},
    {K::kAllGather, std::begin(kAllGather), std::end(kAllGather)},
    {K::kBarrier, std::begin(kBarrier), std::end(kBarrier)},
    {K::kReduceScatter, std::begin(kReduceScatter), std::end(kReduceScatter)},
    {K::kReduce, std::begin(kReduce), std::end(kReduce)},
    {K::kGather, std::begin(kGather), std::end(kGather)},
    {K::kScatter, std::begin(kScatter), std::end(kScatter)},
    {K::kAllToAll, std::begin(kAllToAll), std::end(kAllToAll)},
    {K::kAllToAllV, std::begin(kAllToAllV), std::end(kAllToAllV)},
};

}  // namespace

const std::vector<Algorithm>& registry() {
  static const std::vector<Algorithm> algorithms = [] {
    std::vector<Algorithm> all;
    for (const Table& table : kTables) {
      for (const AlgorithmEntry* e = table.first; e != table.last; ++e) {
        all.push_back(Algorithm{table.kind, e->name, e->description, e->run, e->needs});
      }
    }
    return all;
  }();
  return algorithms;
}

}  // namespace smddp::algo
