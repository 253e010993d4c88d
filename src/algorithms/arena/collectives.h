// SPDX-License-Identifier: Apache-2.0
// The arena's collectives (registered in tables.cc as arena_direct, arena_split, arena,
// arena_eager and pooled). Same contract as the message algorithms (algorithms.h), and the communicator
// must have an arena (arena.h: every rank on one host); without one they fail before touching
// anything, naming the collective.
#pragma once

#include "algorithms/collective.h"
#include "algorithms/exec.h"

namespace smddp::algo::arena {

void allReduceDirect(Exec& exec, const CollectiveArgs& args);  // small messages (all_reduce.cc)
void allReduceSplit(Exec& exec, const CollectiveArgs& args);   // large messages (all_reduce.cc)
void broadcast(Exec& exec, const CollectiveArgs& args);        // through the slots
void broadcastEager(Exec& exec, const CollectiveArgs& args);   // through the eager ring
void allGather(Exec& exec, const CollectiveArgs& args);
void barrier(Exec& exec, const CollectiveArgs& args);
void reduceScatter(Exec& exec, const CollectiveArgs& args);  // reduce_scatter.cc
void reduce(Exec& exec, const CollectiveArgs& args);         // reduce.cc
void gather(Exec& exec, const CollectiveArgs& args);         // gather_scatter.cc
void scatter(Exec& exec, const CollectiveArgs& args);        // gather_scatter.cc
void allToAll(Exec& exec, const CollectiveArgs& args);       // all_to_all.cc (and all_to_allv)
// pooled.cc: in place on tensors in the ranks' shareable memory, else the arena forms above.
void allReducePooled(Exec& exec, const CollectiveArgs& args);
void allGatherPooled(Exec& exec, const CollectiveArgs& args);
void reduceScatterPooled(Exec& exec, const CollectiveArgs& args);
void broadcastPooled(Exec& exec, const CollectiveArgs& args);

}  // namespace smddp::algo::arena
