// SPDX-License-Identifier: Apache-2.0
// Pipelined staging schedule (see staging_plan.h). Each step gets the earliest tick allowed by
// three rules: after its own segment's previous stage, after the same stage of the previous
// segment (one engine per stage), and — for a copy-in — after the copy-out that freed its slot.
// Invariant: ticks are computed in segment order, so every dependency's tick is already known.
#include "reduce/cuda/staging_plan.h"

#include <algorithm>
#include <array>
#include <string>

#include "smddp/error.h"

namespace smddp::reduce {

const char* toString(StagingStage stage) {
  switch (stage) {
    case StagingStage::kCopyIn:
      return "copy-in";
    case StagingStage::kSend:
      return "send";
    case StagingStage::kCopyOut:
      return "copy-out";
  }
  return "unknown";
}

namespace {

constexpr int kStages = 3;
using SegmentTicks = std::array<size_t, kStages>;

// Earliest ticks of segment k's stages given every earlier segment's ticks.
SegmentTicks scheduleSegment(const std::vector<SegmentTicks>& done, size_t k, size_t slots) {
  SegmentTicks t{};
  for (int s = 0; s < kStages; ++s) {
    size_t earliest = s > 0 ? t[s - 1] + 1 : 0;
    if (k > 0) earliest = std::max(earliest, done[k - 1][s] + 1);
    if (s == 0 && k >= slots) earliest = std::max(earliest, done[k - slots][kStages - 1] + 1);
    t[s] = earliest;
  }
  return t;
}

}  // namespace

StagingPlan planStaging(size_t bytes, size_t segmentBytes, int slots) {
  if (segmentBytes == 0 || slots < 1) {
    throw Error(ErrorCode::kInvalidArgument,
                "planStaging: segment size " + std::to_string(segmentBytes) + " and slot count " +
                    std::to_string(slots) + " must both be positive (buffer of " +
                    std::to_string(bytes) + " bytes)");
  }
  StagingPlan plan;
  plan.segments = (bytes + segmentBytes - 1) / segmentBytes;
  if (plan.segments == 0) return plan;
  plan.slots = int(std::min<size_t>(size_t(slots), plan.segments));

  std::vector<SegmentTicks> ticks;
  ticks.reserve(plan.segments);
  for (size_t k = 0; k < plan.segments; ++k) {
    ticks.push_back(scheduleSegment(ticks, k, size_t(plan.slots)));
    size_t offset = k * segmentBytes;
    size_t len = std::min(segmentBytes, bytes - offset);
    for (int s = 0; s < kStages; ++s) {
      plan.steps.push_back(
          {StagingStage(s), k, offset, len, int(k % size_t(plan.slots)), ticks.back()[s]});
    }
  }
  plan.ticks = ticks.back()[kStages - 1] + 1;
  std::stable_sort(plan.steps.begin(), plan.steps.end(),
                   [](const StagingStep& x, const StagingStep& y) {
                     if (x.tick != y.tick) return x.tick < y.tick;
                     return int(x.stage) > int(y.stage);
                   });
  return plan;
}

}  // namespace smddp::reduce
