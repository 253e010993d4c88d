// SPDX-License-Identifier: Apache-2.0
// Ring geometry: how a buffer splits into per-rank chunks, which block a rank sends and receives at
// each step of a ring pass, and how blocks split into pipelining segments.
// Invariant: sender and receiver derive the same block, segment and message index from the same
// step, so a message is skipped (zero elements) on both sides or on neither.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "algorithms/patterns/common.h"

namespace smddp::algo::patterns {

// Chunk c of count elements split over n ranks: the first count % n chunks hold one element more,
// so chunks differ by at most one element and cover [0, count) exactly once, in order.
inline Range ringChunk(size_t count, int n, int c) {
  const size_t q = count / static_cast<size_t>(n);
  const size_t rem = count % static_cast<size_t>(n);
  const size_t uc = static_cast<size_t>(c);
  return Range{uc * q + std::min(uc, rem), q + (uc < rem ? 1 : 0)};
}

// Largest chunk of that split.
inline size_t ringMaxChunk(size_t count, int n) {
  return (count + static_cast<size_t>(n) - 1) / static_cast<size_t>(n);
}

// A ring pass has n-1 steps. At step s rank r sends block (r + shift - s) to r+1 and receives block
// (r + shift - s - 1) from r-1; what it receives at step s it sends at step s+1. After the pass of
// a reduce-scatter (shift 0) rank r holds the finished block r+1; an all-gather pass that starts
// from that block uses shift 1, one that starts from block r uses shift 0.
inline int ringSendBlock(int rank, int n, int shift, int step) {
  return mod(rank + shift - step, n);
}
inline int ringRecvBlock(int rank, int n, int shift, int step) {
  return mod(rank + shift - step - 1, n);
}
inline int ringNext(int rank, int n) { return mod(rank + 1, n); }
inline int ringPrev(int rank, int n) { return mod(rank - 1, n); }

// Whole elements per segment, at least one; segmentBytes 0 means "do not segment".
inline size_t segmentElems(size_t segmentBytes, size_t elementSize) {
  if (segmentBytes == 0) return SIZE_MAX;
  return std::max<size_t>(1, segmentBytes / elementSize);
}

// Segments needed for elems elements (0 for 0).
inline size_t segmentCount(size_t elems, size_t segElems) {
  return elems == 0 ? 0 : (elems - 1) / segElems + 1;
}

// Segment g of a block of blockElems elements; empty when g is past the block's end.
inline Range segmentOf(size_t blockElems, size_t segElems, size_t g) {
  if (g >= segmentCount(blockElems, segElems)) return Range{blockElems, 0};
  const size_t begin = g * segElems;
  return Range{begin, std::min(segElems, blockElems - begin)};
}

// Message indices of one ring pass: step s, segment g -> base + s * segsPerBlock + g. A pass uses
// (n-1) * segsPerBlock messages; every message goes from one rank to its ring successor only.
inline uint64_t ringMessage(uint64_t base, int step, size_t g, size_t segsPerBlock) {
  return base + static_cast<uint64_t>(step) * segsPerBlock + g;
}
inline uint64_t ringPassMessages(int n, size_t segsPerBlock) {
  return static_cast<uint64_t>(n - 1) * segsPerBlock;
}

}  // namespace smddp::algo::patterns
