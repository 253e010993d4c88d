// SPDX-License-Identifier: Apache-2.0
// wholeElements (algorithms/arena/slot_step.h): the arena collectives' chunk size, at most `cap`
// bytes in whole elements and never less than one element; a mask for the power-of-two element
// sizes of every dtype, a division otherwise. Expected values are written out, not recomputed.
#include <gtest/gtest.h>

#include <cstddef>

#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {
namespace {

struct Case {
  size_t cap, elementSize, want;
};

TEST(WholeElements, RoundsDownToWholeElementsAndKeepsAtLeastOne) {
  const Case cases[] = {
      {4096, 1, 4096}, {4096, 2, 4096}, {4096, 4, 4096}, {4096, 8, 4096},
      {4095, 2, 4094}, {4095, 4, 4092}, {4095, 8, 4088}, {7, 4, 4},
      {3, 4, 4},       {1, 8, 8},       {0, 2, 2},       {10, 3, 9},
      {2, 3, 3},       {1048583, 8, 1048576},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(wholeElements(c.cap, c.elementSize), c.want)
        << "cap " << c.cap << ", element size " << c.elementSize;
  }
}

}  // namespace
}  // namespace smddp::algo::arena
