// SPDX-License-Identifier: Apache-2.0
// The buffer shapes and bandwidth factors that the collectives' specs (collective.h) share: how
// many elements a row of `bytes` gives each rank, how large send and recv are for a per-rank
// count, where a rank's block lies in place, and nccl-tests' algbw -> busbw factors.
#pragma once

#include <cstddef>

namespace smddp::bench::shape {

// Elements per rank for a row of `bytes`: the whole row (all_reduce, broadcast, reduce,
// send/recv) or one rank's block of it (all_gather, reduce_scatter, all_to_all, gather, scatter).
inline size_t wholeRow(size_t bytes, size_t elemSize, int) { return bytes / elemSize; }
inline size_t blockOfRow(size_t bytes, size_t elemSize, int n) {
  return bytes / (static_cast<size_t>(n) * elemSize);
}

// A buffer of one count, or of one count per rank.
inline size_t oneBlock(size_t count, int) { return count; }
inline size_t allBlocks(size_t count, int n) { return count * static_cast<size_t>(n); }

// Where this rank's block lies in place: at the start, or at block `rank`.
inline size_t atStart(size_t, int, int) { return 0; }
inline size_t atRankBlock(size_t count, int, int rank) { return count * static_cast<size_t>(rank); }

// busbw = algbw x factor.
inline double factorOne(int) { return 1.0; }
inline double factorAllButOne(int n) { return static_cast<double>(n - 1) / n; }
inline double factorAllReduce(int n) { return 2.0 * (n - 1) / n; }

}  // namespace smddp::bench::shape
