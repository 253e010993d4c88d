// SPDX-License-Identifier: Apache-2.0
// The schedule for moving a GPU buffer through pinned host staging buffers when the provider has
// no FI_HMEM: each segment is copied in (device -> pinned slot), sent over the fabric from the
// slot (for a receiver: received into the slot), and copied out (pinned slot -> device). With S
// slots, up to S segments are in flight, so the copies of one segment overlap the network transfer
// of its neighbours. Pure, so it is unit-tested without a GPU or a network.
// Invariants: segments partition [0, bytes) in order; segment k always uses slot k % S; a slot is
// reused only after the copy-out of its previous segment finished (strictly earlier tick); each
// stage (copy-in engine, network, copy-out engine) runs at most one step per tick; a segment's
// stages run in order at increasing ticks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace smddp::reduce {

enum class StagingStage : uint8_t { kCopyIn, kSend, kCopyOut };
const char* toString(StagingStage stage);

struct StagingStep {
  StagingStage stage;
  size_t segment;  // index of the segment, 0-based
  size_t offset;   // byte offset of the segment in the user buffer
  size_t bytes;    // segment length, 1..segmentBytes
  int slot;        // staging buffer used, 0..slots-1
  size_t tick;     // pipeline time step; the steps of one tick are independent of each other
};

struct StagingPlan {
  size_t segments = 0;
  int slots = 0;     // staging buffers the plan touches: min(requested slots, segments)
  size_t ticks = 0;  // 1 + the last step's tick; 0 for an empty plan
  // Issue order: by tick; within a tick copy-out, then send, then copy-in (drain first).
  std::vector<StagingStep> steps;
};

// bytes may be 0 (empty plan). segmentBytes and slots must be positive, else
// Error(kInvalidArgument). With slots >= 3 the pipeline is full: segments + 2 ticks.
StagingPlan planStaging(size_t bytes, size_t segmentBytes, int slots);

}  // namespace smddp::reduce
