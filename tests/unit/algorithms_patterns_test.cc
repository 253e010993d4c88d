// SPDX-License-Identifier: Apache-2.0
// Pattern math of the algorithms, checked by simulating who knows what after each step with
// bitmasks, without any transport: ring chunks and passes, segments, recursive doubling, the
// binomial tree, Bruck and dissemination rounds, for every n in 1..17.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>

#include "algorithms/patterns/binomial_tree.h"
#include "algorithms/patterns/bruck.h"
#include "algorithms/patterns/hosts.h"
#include "algorithms/patterns/recursive_doubling.h"
#include "algorithms/patterns/ring.h"

namespace smddp::algo::patterns {
namespace {

constexpr int kMaxRanks = 17;
using Mask = uint32_t;
Mask full(int n) { return (Mask{1} << n) - 1; }

TEST(Patterns, Helpers) {
  EXPECT_EQ(mod(-1, 5), 4);
  EXPECT_EQ(mod(-11, 5), 4);
  EXPECT_EQ(mod(7, 5), 2);
  const int logs[] = {0, 0, 1, 2, 2, 3, 3, 3, 3, 4};
  for (int n = 1; n <= 9; ++n) EXPECT_EQ(ceilLog2(n), logs[n]) << "n=" << n;
  const int pows[] = {0, 1, 2, 2, 4, 4, 4, 4, 8, 8};
  for (int n = 1; n <= 9; ++n) EXPECT_EQ(floorPowerOfTwo(n), pows[n]) << "n=" << n;
}

TEST(Patterns, RingChunksCoverEachElementOnce) {
  const size_t counts[] = {0, 1, 2, 3, 5, 7, 13, 16, 17, 33, 1000, 1001, 1037};
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (size_t count : counts) {
      size_t next = 0, smallest = SIZE_MAX, largest = 0;
      for (int c = 0; c < n; ++c) {
        const Range r = ringChunk(count, n, c);
        ASSERT_EQ(r.begin, next) << "n=" << n << " count=" << count << " chunk " << c;
        next = r.end();
        smallest = std::min(smallest, r.count);
        largest = std::max(largest, r.count);
      }
      EXPECT_EQ(next, count) << "n=" << n << " count=" << count;
      EXPECT_LE(largest - smallest, 1u) << "n=" << n << " count=" << count;
      EXPECT_EQ(largest, ringMaxChunk(count, n)) << "n=" << n << " count=" << count;
    }
  }
}

TEST(Patterns, SegmentsCoverEachBlockOnce) {
  EXPECT_EQ(segmentElems(64, 4), 16u);
  EXPECT_EQ(segmentElems(63, 4), 15u);  // rounded down to whole elements
  EXPECT_EQ(segmentElems(1, 8), 1u);    // never zero
  EXPECT_EQ(segmentElems(0, 4), SIZE_MAX);
  EXPECT_EQ(segmentCount(0, 4), 0u);
  EXPECT_EQ(segmentCount(1, SIZE_MAX), 1u);
  for (size_t block = 0; block <= 50; ++block) {
    for (size_t seg = 1; seg <= 9; ++seg) {
      size_t next = 0;
      const size_t segments = segmentCount(block, seg);
      for (size_t g = 0; g < segments; ++g) {
        const Range r = segmentOf(block, seg, g);
        ASSERT_EQ(r.begin, next) << "block=" << block << " seg=" << seg << " g=" << g;
        ASSERT_GT(r.count, 0u) << "block=" << block << " seg=" << seg << " g=" << g;
        ASSERT_LE(r.count, seg);
        next = r.end();
      }
      EXPECT_EQ(next, block) << "block=" << block << " seg=" << seg;
      EXPECT_EQ(segmentOf(block, seg, segments).count, 0u) << "past the end must be empty";
    }
  }
}

// Reduce-scatter (shift 0) then all-gather (shift 1): masks[r][c] = contributions to chunk c that
// rank r holds. Every contribution must arrive exactly once and everyone must end complete.
TEST(Patterns, RingAllReducePassesReachEveryRank) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    std::vector<std::vector<Mask>> m(n, std::vector<Mask>(n));
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) m[r][c] = Mask{1} << r;
    for (int s = 0; s < n - 1; ++s) {
      auto old = m;
      for (int r = 0; r < n; ++r) {
        const int to = ringNext(r, n), block = ringSendBlock(r, n, 0, s);
        ASSERT_EQ(ringRecvBlock(to, n, 0, s), block) << "n=" << n << " step " << s << " rank " << r;
        ASSERT_EQ(old[to][block] & old[r][block], 0u) << "n=" << n << " counted twice";
        m[to][block] |= old[r][block];
        if (s + 1 < n - 1) {  // what arrives at step s leaves at step s+1
          ASSERT_EQ(ringSendBlock(r, n, 0, s + 1), ringRecvBlock(r, n, 0, s));
        }
      }
    }
    for (int r = 0; r < n; ++r)
      ASSERT_EQ(m[r][mod(r + 1, n)], full(n)) << "n=" << n << " rank " << r;
    for (int s = 0; s < n - 1; ++s) {
      auto old = m;
      for (int r = 0; r < n; ++r) {
        const int to = ringNext(r, n), block = ringSendBlock(r, n, 1, s);
        ASSERT_EQ(old[r][block], full(n)) << "n=" << n << " rank " << r << " sends unfinished";
        ASSERT_EQ(ringRecvBlock(to, n, 1, s), block);
        m[to][block] = old[r][block];
      }
    }
    for (int r = 0; r < n; ++r)
      for (int c = 0; c < n; ++c) EXPECT_EQ(m[r][c], full(n)) << "n=" << n << " rank " << r;
  }
}

TEST(Patterns, RingAllGatherPassDeliversEachBlockOnce) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    std::vector<Mask> has(n);
    for (int r = 0; r < n; ++r) has[r] = Mask{1} << r;
    for (int s = 0; s < n - 1; ++s) {
      auto old = has;
      for (int r = 0; r < n; ++r) {
        const int to = ringNext(r, n), block = ringSendBlock(r, n, 0, s);
        ASSERT_TRUE(old[r] >> block & 1) << "n=" << n << " rank " << r << " lacks block " << block;
        ASSERT_FALSE(old[to] >> block & 1) << "n=" << n << " block " << block << " sent twice";
        has[to] |= Mask{1} << block;
      }
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(has[r], full(n)) << "n=" << n << " rank " << r;
  }
}

TEST(Patterns, RingSlotsAreDistinctAndBounded) {
  for (int n = 2; n <= kMaxRanks; ++n) {
    for (size_t segs = 1; segs <= 5; ++segs) {
      std::set<uint64_t> seen;
      for (int s = 0; s < n - 1; ++s)
        for (size_t g = 0; g < segs; ++g) seen.insert(ringMessage(100, s, g, segs));
      EXPECT_EQ(seen.size(), ringPassMessages(n, segs));
      EXPECT_EQ(*seen.begin(), 100u);
      EXPECT_EQ(*seen.rbegin(), 100 + ringPassMessages(n, segs) - 1);
    }
  }
}

TEST(Patterns, RecursiveDoublingReachesEveryRankOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    const int p = floorPowerOfTwo(n);
    std::set<int> virtuals;
    std::vector<Mask> m(n);
    for (int r = 0; r < n; ++r) m[r] = Mask{1} << r;
    for (int r = 0; r < n; ++r) {
      const int v = rdVirtualRank(r, n);
      if (v >= 0) {
        EXPECT_EQ(rdRealRank(v, n), r) << "n=" << n;
        virtuals.insert(v);
      } else {  // fold: r hands its data to its partner
        const int q = rdFoldPartner(r, n);
        ASSERT_GE(rdVirtualRank(q, n), 0) << "n=" << n << " rank " << r;
        ASSERT_EQ(rdFoldPartner(q, n), r);
        m[q] |= m[r];
      }
    }
    ASSERT_EQ(static_cast<int>(virtuals.size()), p) << "n=" << n;
    EXPECT_EQ(*virtuals.rbegin(), p - 1) << "n=" << n;
    for (int k = 0; k < rdSteps(n); ++k) {
      auto old = m;
      for (int r = 0; r < n; ++r) {
        const int q = rdPartner(r, n, k);
        if (rdVirtualRank(r, n) < 0) {
          EXPECT_EQ(q, -1);
          continue;
        }
        ASSERT_EQ(rdPartner(q, n, k), r) << "n=" << n << " step " << k << ": not symmetric";
        ASSERT_EQ(old[r] & old[q], 0u) << "n=" << n << " rank " << r << " step " << k << ": twice";
        m[r] = old[r] | old[q];
      }
    }
    for (int r = 0; r < n; ++r) {  // unfold
      if (rdVirtualRank(r, n) < 0) m[r] = m[rdFoldPartner(r, n)];
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(m[r], full(n)) << "n=" << n << " rank " << r;
  }
}

int subtreeSize(int rank, int n, int root) {
  int size = 1;
  for (int c : binomialChildren(rank, n, root)) size += subtreeSize(c, n, root);
  return size;
}

TEST(Patterns, BinomialTreeSpansWithBoundedDepth) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    for (int root = 0; root < n; ++root) {
      std::vector<int> asChild(n, 0);
      for (int r = 0; r < n; ++r) {
        int previous = n + 1;
        for (int c : binomialChildren(r, n, root)) {
          ++asChild[c];
          EXPECT_EQ(binomialParent(c, n, root), r) << "n=" << n << " root=" << root;
          const int size = subtreeSize(c, n, root);
          EXPECT_EQ(size, binomialSubtreeSize(binomialRelative(c, n, root), n));
          EXPECT_LE(size, previous) << "n=" << n << " root=" << root << ": largest first";
          previous = size;
        }
      }
      EXPECT_EQ(binomialParent(root, n, root), -1);
      EXPECT_EQ(subtreeSize(root, n, root), n) << "n=" << n << " root=" << root;
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(asChild[r], r == root ? 0 : 1) << "n=" << n << " root=" << root << " rank " << r;
        int depth = 0;
        for (int x = r; x != root && depth <= n; x = binomialParent(x, n, root)) ++depth;
        EXPECT_LE(depth, ceilLog2(n)) << "n=" << n << " root=" << root << " rank " << r;
      }
    }
  }
}

TEST(Patterns, BruckFillsEveryPositionOnce) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    // owner[r][j]: whose block rank r holds at position j (-1: nothing yet).
    std::vector<std::vector<int>> owner(n, std::vector<int>(n, -1));
    for (int r = 0; r < n; ++r) owner[r][0] = r;
    for (int k = 0; k < bruckRounds(n); ++k) {
      auto old = owner;
      const int d = bruckDistance(k), c = bruckBlocks(n, k);
      for (int r = 0; r < n; ++r) {
        const int to = bruckSendPeer(r, n, k);
        ASSERT_EQ(bruckRecvPeer(to, n, k), r) << "n=" << n << " round " << k;
        for (int j = 0; j < c; ++j) {
          ASSERT_NE(old[r][j], -1) << "n=" << n << " rank " << r << " sends an empty position";
          ASSERT_EQ(owner[to][d + j], -1) << "n=" << n << " position filled twice";
          owner[to][d + j] = old[r][j];
        }
      }
    }
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j)
        EXPECT_EQ(owner[r][j], bruckBlockOwner(r, n, j)) << "n=" << n << " rank " << r;
  }
}

TEST(Patterns, DisseminationInformsEveryRank) {
  for (int n = 1; n <= kMaxRanks; ++n) {
    std::vector<Mask> heard(n);
    for (int r = 0; r < n; ++r) heard[r] = Mask{1} << r;
    for (int k = 0; k < disseminationRounds(n); ++k) {
      auto old = heard;
      for (int r = 0; r < n; ++r) {
        const int to = disseminationSendPeer(r, n, k);
        ASSERT_EQ(disseminationRecvPeer(to, n, k), r) << "n=" << n << " round " << k;
        heard[to] |= old[r];
      }
    }
    for (int r = 0; r < n; ++r) EXPECT_EQ(heard[r], full(n)) << "n=" << n << " rank " << r;
    if (n > 2) {  // one round fewer must not suffice
      std::vector<Mask> partial(n);
      for (int r = 0; r < n; ++r) partial[r] = Mask{1} << r;
      for (int k = 0; k + 1 < disseminationRounds(n); ++k) {
        auto old = partial;
        for (int r = 0; r < n; ++r) partial[disseminationSendPeer(r, n, k)] |= old[r];
      }
      EXPECT_NE(partial[0], full(n)) << "n=" << n;
    }
  }
}

TEST(HostLayout, GroupsRanksByHostInOrderOfFirstRank) {
  // 3 hosts x 2 ranks, interleaved: b a c a b c.
  const HostLayout l = hostLayout({"b", "a", "c", "a", "b", "c"});
  EXPECT_EQ(l.hosts(), 3);
  EXPECT_EQ(l.ranksPerHost(), 2);
  EXPECT_TRUE(l.hierarchical());
  EXPECT_EQ(l.hostOf, (std::vector<int>{0, 1, 2, 1, 0, 2}));
  EXPECT_EQ(l.local(3), (std::vector<int>{1, 3}));
  EXPECT_EQ(l.localIndex(3), 1);
  EXPECT_EQ(l.localIndex(4), 1);
  EXPECT_EQ(l.cross(3), (std::vector<int>{4, 3, 5}));  // local index 1 of hosts b, a, c
  EXPECT_EQ(l.cross(0), (std::vector<int>{0, 1, 2}));
  // Every rank is in exactly one cross group with one rank per host, and every cross group has
  // the same hosts in the same order on all its ranks.
  for (int r = 0; r < 6; ++r) {
    for (int q : l.cross(r)) EXPECT_EQ(l.cross(q), l.cross(r));
  }
}

TEST(HostLayout, HierarchicalOnlyWithSeveralEqualHostsOfTwoOrMore) {
  EXPECT_FALSE(hostLayout({"a", "a", "a"}).hierarchical());       // one host
  EXPECT_FALSE(hostLayout({"a", "b", "c"}).hierarchical());       // one rank per host
  EXPECT_FALSE(hostLayout({"a", "a", "b"}).hierarchical());       // unequal hosts
  EXPECT_EQ(hostLayout({"a", "a", "b"}).ranksPerHost(), 0);
  EXPECT_TRUE(hostLayout({"a", "b", "a", "b"}).hierarchical());
  EXPECT_FALSE(hostLayout({}).hierarchical());
}

}  // namespace
}  // namespace smddp::algo::patterns
