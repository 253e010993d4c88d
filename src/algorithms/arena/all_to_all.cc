// SPDX-License-Identifier: Apache-2.0
// all_to_all and all_to_allv through the host's shared-memory arena (slot_step.h has the
// protocol). A use carries, for every destination q, up to P bytes (piecePerRank) of this rank's
// piece for q at q * P in its slot; after publishing, each rank copies its part (at rank * P) out
// of every slot, its own included, then releases. Every rank reads every slot of every use, so
// each checks every peer's identity at once: no deferred check.
// all_to_allv first runs one use with the n piece sizes each rank sends: each receiver compares
// the size meant for it with the one it expects (kMismatch naming the pair otherwise), and all
// take the largest piece of the group, which sets how many uses follow (the same on every rank).
// Cost: every byte is copied twice (in once, out once), through cache.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"

namespace smddp::algo::arena {
namespace {

// The prelude of all_to_allv: checks the pairs' sizes and returns the group's largest piece.
size_t agreeOnSizes(Exec& exec, const CollectiveArgs& args) {
  const auto n = static_cast<size_t>(exec.size());
  const auto me = static_cast<size_t>(exec.rank());
  if (n * sizeof(uint64_t) > requireArena(exec).segment().slotBytes()) {
    throw Error(ErrorCode::kInvalidArgument,
                exec.head() +
                    ": the arena's slot cannot hold one size per rank; raise "
                    "SMDDP_ARENA_SLOT_BYTES");
  }
  SlotStep step(exec);
  step.acquire();
  auto* mine = reinterpret_cast<uint64_t*>(step.mine());
  for (size_t q = 0; q < n; ++q) mine[q] = args.sendPieceBytes(q);
  step.publish(1);
  size_t largest = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t q = (me + i) % n;
    if (q != me) step.await(static_cast<int>(q), 1);
    const auto* sizes = reinterpret_cast<const uint64_t*>(step.slotOf(static_cast<int>(q)));
    if (sizes[me] != args.recvPieceBytes(q)) {
      exec.throwAboutPeer(ErrorCode::kMismatch, static_cast<int>(q),
                          "sends " + formatBytes(sizes[me]) + " where this rank expects " +
                              formatBytes(args.recvPieceBytes(q)) +
                              ": the ranks' send and receive counts differ");
    }
    for (size_t j = 0; j < n; ++j) largest = std::max<size_t>(largest, sizes[j]);
  }
  step.release();
  return largest;
}

}  // namespace

void allToAll(Exec& exec, const CollectiveArgs& args) {
  const auto n = static_cast<size_t>(exec.size());
  const auto me = static_cast<size_t>(exec.rank());
  const size_t piece = piecePerRank(exec, args.elementSize());
  const size_t largest = args.uneven() ? agreeOnSizes(exec, args) : args.bytes();
  for (size_t off = 0; off < largest; off += piece) {
    SlotStep step(exec);
    step.acquire();
    for (size_t q = 0; q < n; ++q) {
      const size_t len = args.sendPieceBytes(q);
      if (off >= len) continue;
      std::memcpy(step.mine() + q * piece,
                  static_cast<const unsigned char*>(args.sendPiece(q)) + off,
                  std::min(piece, len - off));
    }
    step.publish(1);
    for (size_t i = 0; i < n; ++i) {
      const size_t q = (me + i) % n;  // our own first: the peers' may still be coming
      if (q != me) step.await(static_cast<int>(q), 1);
      const size_t len = args.recvPieceBytes(q);
      if (off >= len) continue;
      std::memcpy(static_cast<unsigned char*>(args.recvPiece(q)) + off,
                  step.slotOf(static_cast<int>(q)) + me * piece, std::min(piece, len - off));
    }
    step.release();
  }
}

}  // namespace smddp::algo::arena
