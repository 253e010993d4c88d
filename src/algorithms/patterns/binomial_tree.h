// SPDX-License-Identifier: Apache-2.0
// Binomial tree rooted at any rank. Relative rank v = (rank - root) mod n. The parent of v > 0 is v
// with its lowest set bit cleared; the children of v are v + 2^k for every 2^k below v's lowest set
// bit (every 2^k < n for the root) with v + 2^k < n. Depth (edges root -> leaf) = popcount(v) <=
// ceil(log2 n). The subtree of v is the relative range [v, v + lowbit(v)) cut at n. Children are
// listed largest subtree first (so the longest branch starts first); when n is not a power of two
// the cut can make a higher bit's subtree the smaller one, hence the sort.
#pragma once

#include <algorithm>
#include <vector>

#include "algorithms/patterns/common.h"

namespace smddp::algo::patterns {

inline int binomialRelative(int rank, int n, int root) { return mod(rank - root, n); }

// Parent rank, or -1 for the root.
inline int binomialParent(int rank, int n, int root) {
  const int v = binomialRelative(rank, n, root);
  if (v == 0) return -1;
  return mod((v & (v - 1)) + root, n);
}

// Size of the subtree under relative rank v (v > 0).
inline int binomialSubtreeSize(int v, int n) { return std::min(v & -v, n - v); }

// Child ranks, largest subtree first (ties: higher bit first).
inline std::vector<int> binomialChildren(int rank, int n, int root) {
  const int v = binomialRelative(rank, n, root);
  const int lowBit = v == 0 ? (1 << ceilLog2(n)) : (v & -v);
  std::vector<int> relative;
  for (int bit = lowBit >> 1; bit >= 1; bit >>= 1) {
    if (v + bit < n) relative.push_back(v + bit);
  }
  std::stable_sort(relative.begin(), relative.end(), [n](int a, int b) {
    return binomialSubtreeSize(a, n) > binomialSubtreeSize(b, n);
  });
  std::vector<int> children;
  for (int c : relative) children.push_back(mod(c + root, n));
  return children;
}

}  // namespace smddp::algo::patterns
