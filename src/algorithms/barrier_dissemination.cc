// SPDX-License-Identifier: Apache-2.0
// Dissemination barrier (Hensgen, Finkel and Manber), any number of ranks.
//
// Steps (patterns/bruck.h): in round k = 0..ceil(log2 n)-1, send a zero-byte message to
// rank + 2^k and wait for one from rank - 2^k (message k). After round k a rank has heard, directly
// or through others, from the 2^(k+1) - 1 ranks before it, so after the last round from all of
// them: no rank leaves before every rank has arrived. Cost per rank: ceil(log2 n) zero-byte
// messages sent and received; no payload.
#include "algorithms/algorithms.h"
#include "algorithms/patterns/bruck.h"

namespace smddp::algo {

void barrierDissemination(Exec& exec, const CollectiveArgs&) {
  const int n = exec.size();
  const int rank = exec.rank();
  for (int k = 0; k < patterns::disseminationRounds(n); ++k) {
    exec.sendRecv(patterns::disseminationSendPeer(rank, n, k), static_cast<uint64_t>(k), nullptr, 0,
                  patterns::disseminationRecvPeer(rank, n, k), static_cast<uint64_t>(k), nullptr,
                  0);
  }
}

}  // namespace smddp::algo
