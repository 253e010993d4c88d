// SPDX-License-Identifier: Apache-2.0
// A test buffer of `count` T in smddp's shareable memory (Communicator::allocateShared) or in
// ordinary memory, for the in-place collectives' tests. Always at least one byte (a zero count
// still gets a block). And the all_reduce checks those tests share.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "smddp/communicator.h"

namespace smddp::testing {

template <typename T>
struct SharedOrPlain {
  std::shared_ptr<void> shared;
  std::vector<T> plain;
  T* data = nullptr;
  SharedOrPlain(Communicator& c, size_t count, bool useShared) {
    if (useShared) {
      shared = c.allocateShared(count * sizeof(T) + 1);
      data = static_cast<T*>(shared.get());
    } else {
      plain.resize(count + 1);
      data = plain.data();
    }
  }
};

// Element i of rank r's input in the in-place tests.
inline int32_t rankValue(int r, size_t i) { return r * 100 + static_cast<int32_t>(i % 89); }

// On rank `rank` of n: all_reduce SUM in place on int32 and AVG out of place on float (the input
// kept), `count` elements in shareable memory when `shared`; every element against the closed
// form.
inline void checkAllReduces(Communicator& c, int rank, int n, size_t count, bool shared) {
  SharedOrPlain<int32_t> a(c, count, shared);
  for (size_t i = 0; i < count; ++i) a.data[i] = rankValue(rank, i);
  c.allReduce(Buffer(a.data, count, DataType::kInt32), Buffer(a.data, count, DataType::kInt32),
              ReduceOp::kSum)
      .wait();
  for (size_t i = 0; i < count; ++i) {
    int32_t want = 0;
    for (int q = 0; q < n; ++q) want += rankValue(q, i);
    ASSERT_EQ(a.data[i], want) << "all_reduce sum [" << i << "] rank " << rank;
  }
  SharedOrPlain<float> in(c, count, shared), out(c, count, shared);
  for (size_t i = 0; i < count; ++i) {
    in.data[i] = static_cast<float>(rankValue(rank, i));
    out.data[i] = -1;
  }
  c.allReduce(Buffer(in.data, count, DataType::kFloat32),
              Buffer(out.data, count, DataType::kFloat32), ReduceOp::kAvg)
      .wait();
  for (size_t i = 0; i < count; ++i) {
    float sum = 0;
    for (int q = 0; q < n; ++q) sum += static_cast<float>(rankValue(q, i));
    ASSERT_FLOAT_EQ(out.data[i], sum / static_cast<float>(n)) << "avg [" << i << "]";
    ASSERT_EQ(in.data[i], static_cast<float>(rankValue(rank, i))) << "input kept [" << i << "]";
  }
}

}  // namespace smddp::testing
