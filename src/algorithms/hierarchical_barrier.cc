// SPDX-License-Identifier: Apache-2.0
// barrier (hier) across H hosts (hierarchical.h): every rank publishes its arrival in the arena;
// the host's leader (local index 0) waits for the host's ranks, runs the dissemination barrier
// with the other hosts' leaders, then publishes again, which releases the others: ceil(log2 H)
// rounds of one message per host instead of ceil(log2 n) from every rank, plus two arena
// synchronisations.
#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"

namespace smddp::algo {

void barrierHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);
  arena::SlotStep step(local);
  step.acquire();
  step.publish(1);
  if (local.rank() == 0) {
    step.awaitAll(1);
    {
      Exec cross(exec, groups.cross, groups.crossSettings, 0);
      barrierDissemination(cross, args);
      cross.waitAll();
    }
    step.publish(2);
  } else {
    step.await(0, 1);
    step.await(0, 2);
  }
  step.release();
}

}  // namespace smddp::algo
