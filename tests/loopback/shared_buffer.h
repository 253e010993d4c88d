// SPDX-License-Identifier: Apache-2.0
// A test buffer of `count` T in smddp's shareable memory (Communicator::allocateShared) or in
// ordinary memory, for the in-place collectives' tests. Always at least one byte (a zero count
// still gets a block).
#pragma once

#include <cstddef>
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

}  // namespace smddp::testing
