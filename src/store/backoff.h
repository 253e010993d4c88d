// SPDX-License-Identifier: Apache-2.0
// Bounded polling back-off shared by the stores: sleeps start short (a key set a moment later is
// seen quickly) and double up to a cap (hundreds of waiting ranks do not burn the host's cores).
// Invariant: a sleep never overshoots the caller's deadline.
#pragma once

#include <algorithm>
#include <chrono>
#include <thread>

namespace smddp::store {

class Backoff {
 public:
  using Clock = std::chrono::steady_clock;

  Backoff(std::chrono::microseconds first, std::chrono::microseconds cap)
      : next_(first), cap_(cap) {}

  // Sleeps the next interval, clipped to the deadline. Returns false once the deadline has passed.
  bool sleepUntil(Clock::time_point deadline) {
    auto now = Clock::now();
    if (now >= deadline) return false;
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    std::this_thread::sleep_for(std::min(next_, left));
    next_ = std::min(next_ * 2, cap_);
    return true;
  }

 private:
  std::chrono::microseconds next_;
  std::chrono::microseconds cap_;
};

}  // namespace smddp::store
