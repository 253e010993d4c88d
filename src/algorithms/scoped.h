// SPDX-License-Identifier: Apache-2.0
// The algorithms of calls scoped to part of a communicator over several hosts (collective.h:
// Scope), with the same number of ranks on each host and an arena per host (exec.h: HostGroups):
//   kHost barrier   the host's ranks meet in the host's arena (no message);
//   kCross <kind>   the collective among this rank's counterparts on the other hosts, by the
//                   algorithm the selector picks for H ranks on H hosts.
// Not in the registry: no user call selects them (SMDDP_ALGO cannot name them).
#pragma once

#include "algorithms/registry.h"

namespace smddp::algo {

// The algorithm of a call of `kind` scoped to `scope` (not kAll); Error(kInvalidArgument) for a
// scope without one (kHost: only barrier).
const Algorithm& scopedAlgorithm(CollectiveKind kind, Scope scope);

}  // namespace smddp::algo
