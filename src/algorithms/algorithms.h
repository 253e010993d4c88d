// SPDX-License-Identifier: Apache-2.0
// Every message algorithm of the engine, as registered in tables.cc (the arena's are in
// arena/collectives.h). Each runs on every rank
// with the same arguments except buffers, for size() >= 2 and count >= 1 (the core handles the
// trivial cases), and returns with no message of its collective pending.
// Results are bit-identical on every rank (for AVG too: one rank divides, or every rank divides
// the same bits).
#pragma once

#include <cstdint>

#include "algorithms/collective.h"
#include "algorithms/exec.h"

namespace smddp::algo {

// all_reduce
void allReduceRecursiveDoubling(Exec& exec, const CollectiveArgs& args);  // small messages
void allReduceRing(Exec& exec, const CollectiveArgs& args);               // large messages
// across hosts (hierarchical_all_reduce.cc; the communicator must have HostGroups: exec.h)
void allReduceHierDirect(Exec& exec, const CollectiveArgs& args);  // small messages
void allReduceHierLeader(Exec& exec, const CollectiveArgs& args);  // small messages
void allReduceHierSplit(Exec& exec, const CollectiveArgs& args);   // large messages

// broadcast
void broadcastBinomial(Exec& exec, const CollectiveArgs& args);  // small messages
void broadcastChain(Exec& exec, const CollectiveArgs& args);     // large messages
// across hosts (hierarchical_broadcast.cc; HostGroups)
void broadcastHier(Exec& exec, const CollectiveArgs& args);
void broadcastHierLeader(Exec& exec, const CollectiveArgs& args);  // small messages

// all_gather
void allGatherBruck(Exec& exec, const CollectiveArgs& args);  // small messages
void allGatherRing(Exec& exec, const CollectiveArgs& args);   // large messages
// across hosts (hierarchical_all_gather.cc; HostGroups)
void allGatherHier(Exec& exec, const CollectiveArgs& args);
void allGatherHierLeader(Exec& exec, const CollectiveArgs& args);  // small messages

// reduce_scatter
void reduceScatterRing(Exec& exec, const CollectiveArgs& args);  // any size
// across hosts (hierarchical_reduce_scatter.cc; HostGroups)
void reduceScatterHier(Exec& exec, const CollectiveArgs& args);
void reduceScatterHierLeader(Exec& exec, const CollectiveArgs& args);  // small messages

// reduce
void reduceBinomial(Exec& exec, const CollectiveArgs& args);  // any size
// Rank-order reductions for SMDDP_DETERMINISTIC (fixed_order.cc), any size.
void allReduceFixedOrder(Exec& exec, const CollectiveArgs& args);
void reduceScatterFixedOrder(Exec& exec, const CollectiveArgs& args);
void reduceFixedOrder(Exec& exec, const CollectiveArgs& args);
void reduceHier(Exec& exec, const CollectiveArgs& args);  // across hosts (hierarchical_reduce.cc)

// gather, scatter (gather_scatter_linear.cc)
void gatherLinear(Exec& exec, const CollectiveArgs& args);
void scatterLinear(Exec& exec, const CollectiveArgs& args);
// across hosts (hierarchical_gather_scatter.cc; HostGroups)
void gatherHier(Exec& exec, const CollectiveArgs& args);
void scatterHier(Exec& exec, const CollectiveArgs& args);

// all_to_all, all_to_allv
void allToAllPairwise(Exec& exec, const CollectiveArgs& args);  // any size
// across hosts (hierarchical_all_to_all.cc; HostGroups)
void allToAllHier(Exec& exec, const CollectiveArgs& args);
void allToAllHierLeader(Exec& exec, const CollectiveArgs& args);  // equal blocks

// barrier
void barrierDissemination(Exec& exec, const CollectiveArgs& args);
void barrierHier(Exec& exec, const CollectiveArgs& args);  // across hosts (hierarchical_barrier.cc)

// Throws Error(kInvalidArgument) before any message is posted when an algorithm would need more
// message indices per peer pair than the tag layout has (tag::kMaxMsg + 1); the message names the
// collective and suggests a larger SMDDP_SEGMENT_BYTES.
void requireTagRoom(const Exec& exec, uint64_t messages, const char* algorithm);

}  // namespace smddp::algo
