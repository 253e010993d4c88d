// SPDX-License-Identifier: Apache-2.0
// Recursive-doubling all_reduce for small messages, any number of ranks.
//
// Steps (patterns/recursive_doubling.h; p = largest power of two <= n, e = n - p):
//   1. fold: ranks 0..2e-1 pair up (2i, 2i+1); the even rank sends its input to the odd one
//      (message 0) and waits for the final result; the odd one reduces it into its own.
//   2. doubling: the p remaining ranks, renumbered 0..p-1, exchange their whole partial result
//      with virtual partner v ^ 2^k at step k (message 1+k) and reduce, for log2 p steps; after
//      step k each holds the reduction over a group of 2^(k+1) virtual ranks.
//   3. AVG: every participant divides the same summed bits (partners compute a op b and b op a,
//      which IEEE makes bit-identical for sum/prod/min/max of non-NaN values).
//   4. unfold: each odd rank below 2e sends the result to its even partner (message 1+log2 p).
// Cost per rank: log2 p messages of the whole buffer (+1 for fold/unfold ranks, who also reduce or
// wait one more step); bytes sent = log2 p * bytes (+bytes). Latency ~ (log2 p + 2) message
// times, hence the choice for small messages. Scratch: one buffer.
#include "algorithms/algorithms.h"
#include "algorithms/patterns/recursive_doubling.h"
#include "reduce/reducer.h"

namespace smddp::algo {

void allReduceRecursiveDoubling(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t bytes = args.bytes();
  const int steps = patterns::rdSteps(n);
  const uint64_t unfoldSlot = 1 + static_cast<uint64_t>(steps);
  const int foldPartner = patterns::rdFoldPartner(rank, n);

  if (patterns::rdVirtualRank(rank, n) < 0) {  // folded away: hand over, get the result back
    exec.sendRecv(foldPartner, 0, args.send, bytes, foldPartner, unfoldSlot, args.recv, bytes);
    return;
  }
  void* incoming = exec.scratch(bytes, 0);
  const void* partial = args.send;  // where this rank's partial result lives
  auto absorb = [&] {
    reduce::reduce(args.dtype, args.op, args.recv, partial, incoming, args.count);
    partial = args.recv;
  };
  if (foldPartner >= 0) {
    exec.wait(exec.irecv(foldPartner, 0, incoming, bytes));
    absorb();
  }
  for (int k = 0; k < steps; ++k) {
    const int peer = patterns::rdPartner(rank, n, k);
    const uint64_t msg = 1 + static_cast<uint64_t>(k);
    exec.sendRecv(peer, msg, partial, bytes, peer, msg, incoming, bytes);
    absorb();
  }
  if (args.op == ReduceOp::kAvg) reduce::finishAverage(args.dtype, args.recv, args.count, n);
  if (foldPartner >= 0) exec.wait(exec.isend(foldPartner, unfoldSlot, args.recv, bytes));
  exec.waitAll();
}

}  // namespace smddp::algo
