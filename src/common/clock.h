// SPDX-License-Identifier: Apache-2.0
// coarseNow(): steady_clock's time as of the last kernel tick (CLOCK_MONOTONIC_COARSE, the
// same base as steady_clock, behind it by at most coarseLag(), one tick: 1-10 ms by the kernel's
// HZ). Costs ~3 ns against ~22 ns for steady_clock::now() here, so per-collective bookkeeping
// that needs only millisecond accuracy (flight-recorder times, a collective's deadline of
// seconds, extended by coarseLag() so it is never early) uses it; waits and the engine's 100 us
// hand-off grace keep the precise clock.
#pragma once

#include <time.h>

#include <chrono>

namespace smddp {

inline std::chrono::steady_clock::time_point coarseNow() {
  timespec ts;
  if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return std::chrono::steady_clock::now();
  return std::chrono::steady_clock::time_point(
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec)));
}

// One tick of the coarse clock (its resolution), measured once.
inline std::chrono::nanoseconds coarseLag() {
  static const std::chrono::nanoseconds lag = [] {
    timespec ts;
    if (clock_getres(CLOCK_MONOTONIC_COARSE, &ts) != 0) return std::chrono::nanoseconds(0);
    return std::chrono::seconds(ts.tv_sec) + std::chrono::nanoseconds(ts.tv_nsec);
  }();
  return lag;
}

}  // namespace smddp
