// SPDX-License-Identifier: Apache-2.0
// Time estimates (process_group.h): torch's startTimeEstimate / endTimeEstimate on the engine's
// Communicator::beginEstimate / endEstimate, so every collective in between, whatever path it
// takes here (queued, coalesced, on the caller's thread), is costed instead of run.
#include "process_group.h"

#if SMDDP_TORCH_TIME_ESTIMATE

namespace smddp::torch_shim {

void ProcessGroupSmddp::startTimeEstimate() { enter().comm().beginEstimate(); }

float ProcessGroupSmddp::endTimeEstimate() {
  return static_cast<float>(enter().comm().endEstimate());
}

}  // namespace smddp::torch_shim

#endif  // SMDDP_TORCH_TIME_ESTIMATE
