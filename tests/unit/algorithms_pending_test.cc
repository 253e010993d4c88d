// SPDX-License-Identifier: Apache-2.0
// PendingChecks (algorithms/arena/arena.h): the eager broadcast root's queue of unchecked uses,
// a fixed circular buffer. Pushes and pops interleaved so that the queue fills up to 60 of its 64
// places while its head goes round the end of the buffer, keeping first-in first-out order.
#include <gtest/gtest.h>

#include <cstdint>
#include <deque>

#include "algorithms/arena/arena.h"

namespace smddp::algo::arena {
namespace {

TEST(PendingChecks, KeepsOrderWhileFillingAcrossTheBufferEnd) {
  PendingChecks checks;
  std::deque<uint64_t> model;
  uint64_t next = 0;
  // Rounds of 3 pushes and 2 pops: the head moves on while the count climbs to 60.
  for (int round = 0; round < 60; ++round) {
    for (int i = 0; i < 3; ++i) {
      DeferredCheck c;
      c.use = next;
      c.desc.seq = next * 7 + 1;
      checks.push(c);
      model.push_back(next++);
    }
    for (int i = 0; i < 2; ++i) {
      ASSERT_FALSE(checks.empty());
      EXPECT_EQ(checks.front().use, model.front()) << "round " << round;
      EXPECT_EQ(checks.front().desc.seq, model.front() * 7 + 1) << "round " << round;
      checks.pop();
      model.pop_front();
    }
    ASSERT_EQ(checks.size(), model.size());
  }
  while (!model.empty()) {
    EXPECT_EQ(checks.front().use, model.front());
    checks.pop();
    model.pop_front();
  }
  EXPECT_TRUE(checks.empty());
}

}  // namespace
}  // namespace smddp::algo::arena
