// SPDX-License-Identifier: Apache-2.0
// Small integer helpers shared by the pattern headers: modular rank arithmetic and logarithms.
// Invariant: pure functions of their arguments; no transport, no allocation.
#pragma once

#include <cstddef>

namespace smddp::algo::patterns {

// a mod n in [0, n) for any sign of a (C++'s % keeps the sign of a).
constexpr int mod(int a, int n) { return ((a % n) + n) % n; }

// Smallest k with 2^k >= n (0 for n <= 1): the round count of dissemination, Bruck and the
// depth bound of a binomial tree.
constexpr int ceilLog2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// Largest power of two <= n (n >= 1).
constexpr int floorPowerOfTwo(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

// Half-open element range [begin, begin + count).
struct Range {
  size_t begin = 0;
  size_t count = 0;
  size_t end() const { return begin + count; }
};

}  // namespace smddp::algo::patterns
