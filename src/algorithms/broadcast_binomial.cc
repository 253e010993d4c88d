// SPDX-License-Identifier: Apache-2.0
// Binomial-tree broadcast for small messages.
//
// Steps (patterns/binomial_tree.h): every non-root receives the whole buffer from its parent into
// recv (message 0), then sends it to its children, largest subtree first; the root sends from send
// and copies send -> recv when not in place. ceil(log2 n) rounds.
// Cost: one message received per non-root; a rank with c children sends c messages of the whole
// buffer (root: ceil(log2 n)); total n-1 messages, n-1 times bytes on the wire.
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/patterns/binomial_tree.h"

namespace smddp::algo {

void broadcastBinomial(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t bytes = args.bytes();
  const int parent = patterns::binomialParent(rank, n, args.root);
  if (parent >= 0) exec.wait(exec.irecv(parent, 0, args.recv, bytes));
  const void* source = parent >= 0 ? args.recv : args.send;
  for (int child : patterns::binomialChildren(rank, n, args.root)) {
    exec.isend(child, 0, source, bytes);
  }
  // The root's copy overlaps its sends; both only read send.
  if (parent < 0 && !args.inPlace()) std::memcpy(args.recv, args.send, bytes);
  exec.waitAll();
}

}  // namespace smddp::algo
