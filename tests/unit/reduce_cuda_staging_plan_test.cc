// SPDX-License-Identifier: Apache-2.0
// The pinned-host staging planner (src/reduce/cuda/staging_plan.h): coverage of the buffer,
// stage order per segment, one step per stage per tick, and bounded slot reuse, over sizes that
// leave partial last segments and slot counts from 1 to more than the segments.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "reduce/cuda/staging_plan.h"
#include "smddp/error.h"

namespace smddp::reduce {
namespace {

struct SegmentView {
  size_t offset = 0, bytes = 0;
  int slot = -1;
  size_t tick[3] = {0, 0, 0};
  int seen[3] = {0, 0, 0};
};

void checkPlan(size_t bytes, size_t seg, int slots) {
  const std::string what = "bytes=" + std::to_string(bytes) + " segment=" + std::to_string(seg) +
                           " slots=" + std::to_string(slots);
  StagingPlan p = planStaging(bytes, seg, slots);
  size_t segments = (bytes + seg - 1) / seg;
  ASSERT_EQ(p.segments, segments) << what;
  ASSERT_EQ(p.steps.size(), 3 * segments) << what;
  std::vector<SegmentView> view(segments);
  std::map<std::pair<size_t, int>, int> perStageTick;
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const StagingStep& s = p.steps[i];
    ASSERT_LT(s.segment, segments) << what;
    if (i > 0) {
      ASSERT_LE(p.steps[i - 1].tick, s.tick) << what << ": steps not in tick order";
    }
    int& sameStage = perStageTick[std::make_pair(s.tick, int(s.stage))];
    ASSERT_EQ(++sameStage, 1) << what << ": two " << toString(s.stage) << " steps at tick "
                              << s.tick;
    SegmentView& v = view[s.segment];
    v.offset = s.offset;
    v.bytes = s.bytes;
    v.slot = s.slot;
    v.tick[int(s.stage)] = s.tick;
    ++v.seen[int(s.stage)];
    ASSERT_LT(s.tick, p.ticks) << what;
  }
  size_t next = 0;
  for (size_t k = 0; k < segments; ++k) {
    const SegmentView& v = view[k];
    ASSERT_EQ(v.seen[0] + v.seen[1] * 10 + v.seen[2] * 100, 111) << what << " segment " << k;
    ASSERT_EQ(v.offset, next) << what << " segment " << k;  // contiguous, in order
    ASSERT_GE(v.bytes, 1u) << what;
    ASSERT_LE(v.bytes, seg) << what;
    next += v.bytes;
    ASSERT_EQ(v.slot, int(k % size_t(p.slots))) << what << " segment " << k;
    ASSERT_LT(v.tick[0], v.tick[1]) << what << " segment " << k;
    ASSERT_LT(v.tick[1], v.tick[2]) << what << " segment " << k;
    if (k >= size_t(p.slots)) {  // the slot's previous user has copied out before the copy-in
      ASSERT_LT(view[k - p.slots].tick[2], v.tick[0]) << what << " segment " << k;
    }
  }
  ASSERT_EQ(next, bytes) << what;
  // At most `slots` segments hold a slot at any tick.
  for (size_t t = 0; t < p.ticks; ++t) {
    int live = 0;
    for (const SegmentView& v : view) live += (v.tick[0] <= t && t <= v.tick[2]) ? 1 : 0;
    ASSERT_LE(live, p.slots) << what << " tick " << t;
  }
  if (segments > 0 && slots >= 3) {
    ASSERT_EQ(p.ticks, segments + 2) << what << ": pipeline not full";
  }
  if (segments > 0 && slots == 1) {
    ASSERT_EQ(p.ticks, 3 * segments) << what;
  }
}

TEST(ReduceCudaStagingPlan, CoversBufferWithBoundedSlotReuse) {
  for (size_t bytes : {size_t(0), size_t(1), size_t(4095), size_t(4096), size_t(4097),
                       size_t(40000), size_t(1) << 20}) {
    for (size_t seg : {size_t(1) << 10, size_t(4096), size_t(65536)}) {
      for (int slots : {1, 2, 3, 4, 8, 1000}) {
        checkPlan(bytes, seg, slots);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

TEST(ReduceCudaStagingPlan, TwoSlotsAlternate) {
  StagingPlan p = planStaging(4 * 100, 100, 2);
  ASSERT_EQ(p.slots, 2);
  // Segment 2 reuses slot 0 only after segment 0's copy-out at tick 2.
  for (const StagingStep& s : p.steps) {
    if (s.segment == 2 && s.stage == StagingStage::kCopyIn) {
      EXPECT_EQ(s.tick, 3u);
    }
  }
  EXPECT_EQ(p.steps.front().stage, StagingStage::kCopyIn);
  EXPECT_EQ(p.steps.back().stage, StagingStage::kCopyOut);
}

TEST(ReduceCudaStagingPlan, EmptyAndInvalid) {
  StagingPlan p = planStaging(0, 4096, 4);
  EXPECT_EQ(p.segments, 0u);
  EXPECT_EQ(p.ticks, 0u);
  EXPECT_TRUE(p.steps.empty());
  EXPECT_EQ(planStaging(10, 4096, 4).slots, 1);  // never more slots than segments
  for (auto [seg, slots] : {std::pair<size_t, int>{0, 4}, {4096, 0}, {4096, -1}}) {
    try {
      planStaging(100, seg, slots);
      ADD_FAILURE() << "segment " << seg << " slots " << slots << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace smddp::reduce
