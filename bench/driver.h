// SPDX-License-Identifier: Apache-2.0
// Entry point of every *_perf binary: parses the flags, finds this process's rank (forked by -np,
// or given by SMDDP_RANK/SMDDP_WORLD_SIZE or mpirun), joins the communicator through the store,
// runs the sweep and prints the report on rank 0. Invariant: the exit status is 0 only when every
// rank finished and every checked element (and guard byte) was right. Statuses: 0 success,
// 1 a rank failed (error, crash, timeout; with -np also wrong results), 2 bad usage, 3 this rank's
// report counted wrong elements or damaged guard bytes.
#pragma once

#include "collective.h"

namespace smddp::bench {

int benchMain(int argc, char** argv, const CollectiveSpec& spec);

}  // namespace smddp::bench
