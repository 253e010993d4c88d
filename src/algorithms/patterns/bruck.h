// SPDX-License-Identifier: Apache-2.0
// Bruck all-gather and dissemination barrier rounds, for any n: ceil(log2 n) rounds; in round k
// the distance is d = 2^k, rank r sends to r - d (Bruck) or r + d (dissemination) and receives from
// the opposite side.
// Bruck layout: position j of rank r's scratch holds the block of rank (r + j) mod n. Round k sends
// positions [0, c) and receives positions [d, d + c) with c = min(d, n - d), so after the rounds
// positions 0..n-1 are all filled, each exactly once.
#pragma once

#include <algorithm>

#include "algorithms/patterns/common.h"

namespace smddp::algo::patterns {

inline int bruckRounds(int n) { return ceilLog2(n); }
inline int bruckDistance(int round) { return 1 << round; }
inline int bruckBlocks(int n, int round) {
  return std::min(bruckDistance(round), n - bruckDistance(round));
}
inline int bruckSendPeer(int rank, int n, int round) { return mod(rank - bruckDistance(round), n); }
inline int bruckRecvPeer(int rank, int n, int round) { return mod(rank + bruckDistance(round), n); }
inline int bruckBlockOwner(int rank, int n, int position) { return mod(rank + position, n); }

inline int disseminationRounds(int n) { return ceilLog2(n); }
inline int disseminationSendPeer(int rank, int n, int round) { return mod(rank + (1 << round), n); }
inline int disseminationRecvPeer(int rank, int n, int round) { return mod(rank - (1 << round), n); }

}  // namespace smddp::algo::patterns
