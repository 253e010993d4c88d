// SPDX-License-Identifier: Apache-2.0
// Pairwise-exchange all_to_all (equal and uneven pieces): in step s (1 <= s < n) a rank sends its
// piece for rank + s and receives the piece of rank - s, so every step pairs each rank with a
// different sender and receiver and no rank is flooded. Up to kWindow steps are in flight at once
// (their receives posted before their sends); the own piece is copied while the first window
// runs. The window's sends are awaited before its receives (a receive's error must not strand a
// peer's). One message per ordered pair (message index 0), straight from the input piece into the
// output piece: no scratch, no copy.
// Uneven pieces: a pair's counts must agree. A longer message than the receiver expects fails its
// receive (the transport's truncation error), a shorter one fails Exec's size check (kMismatch).
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"

namespace smddp::algo {
namespace {

constexpr int kWindow = 8;

}  // namespace

void allToAllPairwise(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int me = exec.rank();
  for (int first = 1; first < n; first += kWindow) {
    const int last = std::min(n, first + kWindow);
    for (int s = first; s < last; ++s) {
      const auto from = static_cast<size_t>((me - s + n) % n);
      exec.irecv(static_cast<int>(from), 0, args.recvPiece(from), args.recvPieceBytes(from));
    }
    Exec::Handle sends[kWindow];
    for (int s = first; s < last; ++s) {
      const auto to = static_cast<size_t>((me + s) % n);
      sends[s - first] =
          exec.isend(static_cast<int>(to), 0, args.sendPiece(to), args.sendPieceBytes(to));
    }
    const auto self = static_cast<size_t>(me);
    if (first == 1 && args.sendPieceBytes(self) > 0) {
      std::memcpy(args.recvPiece(self), args.sendPiece(self), args.sendPieceBytes(self));
    }
    // The sends first: a receive that fails its size check throws, and this rank's pieces must
    // have reached their peers by then (each peer then fails or finishes by itself).
    for (int s = first; s < last; ++s) exec.wait(sends[s - first]);
    exec.waitAll();
  }
}

}  // namespace smddp::algo
