// SPDX-License-Identifier: Apache-2.0
// Linear gather and scatter: the root exchanges one message with every other rank.
//
// gather: every non-root sends its block to the root (message 0); the root receives block r of
// its output from rank r straight into place, all receives posted at once, and copies its own
// block when not in place. scatter: the reverse: the root sends block r of its input to rank r
// (all sends posted at once) and copies its own block; every non-root receives into its output.
// Cost: the root sends or receives n-1 blocks, every other rank one; one round.
#include <cstring>

#include "algorithms/algorithms.h"

namespace smddp::algo {

void gatherLinear(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t bytes = args.bytes();
  if (exec.rank() != args.root) {
    exec.wait(exec.isend(args.root, 0, args.send, bytes));
    return;
  }
  for (int r = 0; r < n; ++r) {
    if (r != args.root) exec.irecv(r, 0, args.block(static_cast<size_t>(r)), bytes);
  }
  void* mine = args.block(static_cast<size_t>(args.root));
  if (mine != args.send) std::memcpy(mine, args.send, bytes);  // overlaps the receives
  exec.waitAll();
}

void scatterLinear(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t bytes = args.bytes();
  if (exec.rank() != args.root) {
    exec.wait(exec.irecv(args.root, 0, args.recv, bytes));
    return;
  }
  for (int r = 0; r < n; ++r) {
    if (r != args.root) exec.isend(r, 0, args.sendBlock(static_cast<size_t>(r)), bytes);
  }
  const void* mine = args.sendBlock(static_cast<size_t>(args.root));
  if (mine != args.recv) std::memcpy(args.recv, mine, bytes);  // overlaps the sends
  exec.waitAll();
}

}  // namespace smddp::algo
