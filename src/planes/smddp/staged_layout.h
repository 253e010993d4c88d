// SPDX-License-Identifier: Apache-2.0
// Where a CUDA call's buffers go in one pinned host block, and the host calls that run on it.
// Pure (no device), so it is unit-tested without one.
//
// The pieces a call reads (inputs) and writes (outputs) are merged where they overlap (an in-place
// call's input lies inside its output) into disjoint ranges, each given an offset in the block;
// every device pointer of the call maps to the same place in the block, so the host call keeps the
// call's aliasing (in place stays in place). all_reduce, broadcast and reduce above segmentBytes
// are cut into segments of whole elements: each segment is its own host call over its slice, so
// the copies of one segment overlap the exchange of another. The other collectives are one
// segment.
// Invariants: segments partition the call's elements in order; every input byte is copied in by
// exactly one segment and every output byte copied out by exactly one; a segment reads no byte
// another segment writes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/collective.h"

namespace smddp::planes {

// A run of bytes between a device buffer and the pinned block.
struct StagedPiece {
  const void* device = nullptr;
  size_t bytes = 0;
  size_t offset = 0;  // in the pinned block
};

struct StagedSegment {
  algo::CollectiveArgs host;     // the call on the pinned block (memory kHost)
  std::vector<StagedPiece> in;   // device -> block before it runs
  std::vector<StagedPiece> out;  // block -> device after it ran
};

struct StagedLayout {
  size_t blockBytes = 0;  // pinned bytes the call needs
  std::vector<StagedSegment> segments;
};

// args: a validated kCuda call of this rank (of `size` ranks); base: the pinned block (any
// address when only blockBytes is wanted). Throws Error(kInvalidArgument) if segmentBytes is 0.
StagedLayout layoutStaged(const algo::CollectiveArgs& args, int rank, int size, size_t segmentBytes,
                          char* base);

}  // namespace smddp::planes
