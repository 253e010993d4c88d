// SPDX-License-Identifier: Apache-2.0
// Bruck all_gather for small messages, any number of ranks.
//
// Steps (patterns/bruck.h): scratch position j holds the block of rank (rank + j) mod n; position
// 0 starts as this rank's send. In round k (d = 2^k, ceil(log2 n) rounds) send positions [0, c)
// to rank - d and receive positions [d, d + c) from rank + d in one message each (message k),
// c = min(d, n - d). Finally copy position j to blocks[(rank + j) mod n] (and send to
// blocks[rank] unless in place).
// Cost per rank: ceil(log2 n) messages; (n-1) * bytes sent and received in total (bytes = one
// rank's block); one extra copy of the gathered data. Scratch: n * bytes.
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/patterns/bruck.h"

namespace smddp::algo {

void allGatherBruck(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t bytes = args.bytes();
  char* scratch = static_cast<char*>(exec.scratch(bytes * static_cast<size_t>(n), 0));
  std::memcpy(scratch, args.send, bytes);
  for (int k = 0; k < patterns::bruckRounds(n); ++k) {
    const size_t d = static_cast<size_t>(patterns::bruckDistance(k));
    const size_t chunk = static_cast<size_t>(patterns::bruckBlocks(n, k)) * bytes;
    exec.sendRecv(patterns::bruckSendPeer(rank, n, k), static_cast<uint64_t>(k), scratch, chunk,
                  patterns::bruckRecvPeer(rank, n, k), static_cast<uint64_t>(k),
                  scratch + d * bytes, chunk);
  }
  for (int j = 0; j < n; ++j) {
    void* dst = args.block(static_cast<size_t>(patterns::bruckBlockOwner(rank, n, j)));
    if (j == 0 && dst == args.send) continue;
    std::memcpy(dst, scratch + static_cast<size_t>(j) * bytes, bytes);
  }
  exec.waitAll();
}

}  // namespace smddp::algo
