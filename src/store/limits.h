// SPDX-License-Identifier: Apache-2.0
// Sizes every store holds keys and values to, whatever carries them (a TCP frame, a file): a
// store never allocates more than this for one value, whoever wrote it.
#pragma once

#include <cstdint>

namespace smddp::store {

constexpr uint32_t kMaxKey = 64 * 1024;
constexpr uint32_t kMaxValue = 64u * 1024 * 1024;

}  // namespace smddp::store
