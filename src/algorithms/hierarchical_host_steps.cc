// SPDX-License-Identifier: Apache-2.0
// The arena steps the hierarchical collectives share (declared in hierarchical.h), each a slot use
// at a time through the host's arena (arena/slot_step.h has its protocol):
//   hostBroadcast   broadcast's hier and hier_leader (hierarchical_broadcast.cc);
//   hostGather      all_gather hier_leader, gather hier, all_to_all hier_leader;
//   hostScatter     reduce_scatter hier_leader, scatter hier, all_to_all hier_leader;
//   hostAllGather   all_reduce hier_split's phase 3, broadcast hier's phase 3.
#include <algorithm>
#include <cstring>

#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"

namespace smddp::algo {

void hier::hostBroadcast(Exec& local, int source, const unsigned char* from, unsigned char* out,
                         size_t bytes, size_t es) {
  const bool isSource = local.rank() == source;
  const size_t chunk = arena::SlotStep::chunkBytes(local, es);
  for (size_t off = 0; off < bytes; off += chunk) {
    const size_t n = std::min(chunk, bytes - off);
    arena::SlotStep step(local);
    step.acquire();
    if (isSource) std::memcpy(step.mine(), from + off, n);
    step.publish(1);
    step.awaitAll(1);
    if (!isSource) std::memcpy(out + off, step.slotOf(source), n);
    step.release();
  }
}

void hier::hostGather(Exec& local, int collector, const unsigned char* own, size_t block,
                      size_t es, unsigned char* pack) {
  const bool collects = local.rank() == collector;
  const size_t piece = arena::SlotStep::chunkBytes(local, es);
  for (size_t at = 0; at < block; at += piece) {
    const size_t n = std::min(piece, block - at);
    arena::SlotStep step(local);
    step.acquire();
    std::memcpy(step.mine(), own + at, n);
    step.publish(1);
    if (collects) {
      step.awaitAll(1);
      for (int q = 0; q < local.size(); ++q) {
        std::memcpy(pack + static_cast<size_t>(q) * block + at, step.slotOf(q), n);
      }
    } else {
      step.await(collector, 1);
    }
    step.release();
  }
}

void hier::hostScatter(Exec& local, int source, const unsigned char* pack, size_t block,
                       size_t es, unsigned char* out) {
  const bool hands = local.rank() == source;
  const auto perHost = static_cast<size_t>(local.size());
  const auto me = static_cast<size_t>(local.rank());
  const size_t piece = arena::piecePer(local, es, perHost);
  for (size_t at = 0; at < block; at += piece) {
    const size_t n = std::min(piece, block - at);
    arena::SlotStep step(local);
    step.acquire();
    for (size_t q = 0; hands && q < perHost; ++q) {
      std::memcpy(step.mine() + q * piece, pack + q * block + at, n);
    }
    step.publish(1);
    if (hands) {
      step.awaitAll(1);
      std::memcpy(out + at, pack + me * block + at, n);
    } else {
      step.await(source, 1);
      std::memcpy(out + at, step.slotOf(source) + me * piece, n);
    }
    step.release();
  }
}

void hier::hostAllGather(Exec& local, size_t count, size_t es, unsigned char* out) {
  const int ranksHere = local.size();
  const int me = local.rank();
  const size_t piece = arena::SlotStep::chunkBytes(local, es, 2) / es;
  const patterns::Range mine = patterns::ringChunk(count, ranksHere, me);
  const size_t longest = patterns::ringChunk(count, ranksHere, 0).count;
  for (size_t at = 0; at < longest; at += piece) {
    arena::SlotStep step(local);
    step.acquire();
    std::memcpy(step.mine(), out + (mine.begin + at) * es, pieceOf(mine, at, piece) * es);
    step.publish(1);
    for (int i = 1; i < ranksHere; ++i) {
      const int q = (me + i) % ranksHere;
      step.await(q, 1);
      const patterns::Range block = patterns::ringChunk(count, ranksHere, q);
      std::memcpy(out + (block.begin + at) * es, step.slotOf(q), pieceOf(block, at, piece) * es);
    }
    step.release();
  }
}

}  // namespace smddp::algo
