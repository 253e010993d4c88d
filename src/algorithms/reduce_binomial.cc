// SPDX-License-Identifier: Apache-2.0
// Binomial-tree reduce to any root.
//
// Steps (patterns/binomial_tree.h, the broadcast tree run backwards): every rank posts a receive
// from each of its children (message 0, into its own scratch area), reduces them into its
// accumulator as they arrive, in the tree's order, then sends the accumulator to its parent
// (message 0). The root's accumulator is recv; a non-root's is scratch, so only the root's
// output is written. For AVG the root divides once at the end.
// Cost: a rank with c children receives c whole buffers and reduces c times (the root ceil(log2
// n)); every non-root sends once: n-1 messages, n-1 times bytes on the wire, ceil(log2 n) rounds.
#include <array>
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/patterns/binomial_tree.h"
#include "reduce/reducer.h"

namespace smddp::algo {

void reduceBinomial(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t bytes = args.bytes();
  const int parent = patterns::binomialParent(rank, n, args.root);
  const std::vector<int> children = patterns::binomialChildren(rank, n, args.root);
  char* incoming = static_cast<char*>(exec.scratch(bytes * children.size(), 0));
  std::array<Exec::Handle, 32> recvs{};  // a rank has at most ceil(log2 n) <= 31 children
  for (size_t c = 0; c < children.size(); ++c) {
    recvs[c] = exec.irecv(children[c], 0, incoming + c * bytes, bytes);
  }
  // The accumulator: recv on the root, scratch elsewhere; `partial` is what it holds so far.
  void* acc = parent < 0 ? args.recv : exec.scratch(bytes, 1);
  const void* partial = args.send;
  for (size_t c = 0; c < children.size(); ++c) {
    exec.wait(recvs[c]);
    reduce::reduce(args.dtype, args.op, acc, partial, incoming + c * bytes, args.count);
    partial = acc;
  }
  if (parent >= 0) {
    exec.wait(exec.isend(parent, 0, partial, bytes));
    return;
  }
  if (partial != args.recv) std::memcpy(args.recv, partial, bytes);  // a root without children
  if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, args.recv, args.count, n);
}

}  // namespace smddp::algo
