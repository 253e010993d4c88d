// SPDX-License-Identifier: Apache-2.0
// Recursive doubling for any n. Let p be the largest power of two <= n and e = n - p ("extra").
// Fold: among ranks 0..2e-1, each even rank hands its data to the odd rank above it and sits out;
// the p remaining ranks get virtual ranks 0..p-1 (odd r < 2e -> r/2, r >= 2e -> r - e).
// Doubling: at step k (0 <= k < log2 p) virtual rank v exchanges with v ^ 2^k.
// Unfold: each odd rank r < 2e returns the result to r-1.
// Invariant: the virtual<->real maps are inverse on participants.
#pragma once

#include "algorithms/patterns/common.h"

namespace smddp::algo::patterns {

inline int rdExtra(int n) { return n - floorPowerOfTwo(n); }
inline int rdSteps(int n) { return ceilLog2(floorPowerOfTwo(n)); }

// The rank this one folds with (its neighbour among the first 2e ranks), or -1.
inline int rdFoldPartner(int rank, int n) {
  if (rank >= 2 * rdExtra(n)) return -1;
  return rank % 2 == 0 ? rank + 1 : rank - 1;
}

// Virtual rank in the doubling phase, or -1 for an even rank that folded away.
inline int rdVirtualRank(int rank, int n) {
  const int e = rdExtra(n);
  if (rank < 2 * e) return rank % 2 == 0 ? -1 : rank / 2;
  return rank - e;
}

inline int rdRealRank(int vrank, int n) {
  const int e = rdExtra(n);
  return vrank < e ? 2 * vrank + 1 : vrank + e;
}

// Partner at doubling step k, or -1 for a rank that folded away.
inline int rdPartner(int rank, int n, int step) {
  const int v = rdVirtualRank(rank, n);
  return v < 0 ? -1 : rdRealRank(v ^ (1 << step), n);
}

}  // namespace smddp::algo::patterns
