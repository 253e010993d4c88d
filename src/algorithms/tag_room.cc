// SPDX-License-Identifier: Apache-2.0
// The one check every segmented algorithm makes before it posts anything: its message indices fit
// in the tag layout (common/tag.h). Failing here, before any data moved, keeps the communicator
// usable.
#include <string>

#include "algorithms/algorithms.h"
#include "common/tag.h"
#include "smddp/error.h"

namespace smddp::algo {

void requireTagRoom(const Exec& exec, uint64_t messages, const char* algorithm) {
  if (messages <= tag::kMaxMsg + 1) return;
  throw Error(ErrorCode::kInvalidArgument,
              exec.head() + ": " + algorithm + " would need " + std::to_string(messages) +
                  " messages per peer pair, more than the tag layout's " +
                  std::to_string(tag::kMaxMsg + 1) + " with segments of " +
                  formatBytes(exec.segmentBytes()) + "; raise SMDDP_SEGMENT_BYTES");
}

}  // namespace smddp::algo
