// SPDX-License-Identifier: Apache-2.0
// all_reduce through the host's shared-memory arena (every rank on one host; slot_step.h has the
// protocol). The buffer is processed in chunks (arena_direct: one arena slot, arena_split: half a
// slot, both capped by the segment size; SlotStep::chunkBytes says why);
// slots alternate, so a rank copies chunk k+1 in while slower peers still read chunk k.
//
// arena_direct (small messages), per chunk:
//   1. copy the input chunk into this rank's slot; publish.
//   2. wait for every rank's chunk; reduce all n in rank order into the output (every rank
//      computes the same bits in the same order); AVG divides; release.
//   Cost per rank: one copy in, (n-1) chunk reductions, one synchronisation: latency ~ one
//   cache-line hand-off per peer, no message, no matching.
// arena_split (large messages), per chunk, with the chunk cut into n element-aligned slices:
//   1. copy the input chunk, except slice r, into this rank's slot; publish phase 1.
//   2. reduce slice r of every rank's input (the own from the input, the peers' from their
//      slots), from rank r on (SMDDP_DETERMINISTIC: in rank order), into the own slot (slice r
//      of it is read by no one before phase 2); AVG divides; publish phase 2.
//   3. wait for every rank's phase 2; copy every slice from its owner's slot into the output;
//      release.
//   Cost per rank: copy in ((n-1)/n bytes), reduce ((n-1) slices), copy out (bytes): from memory
//   each input byte is read once and each output byte written once, as in a memcpy; the
//   intermediate data stays in cache, and the reduction work is split n ways.
#include <cstring>

#include "algorithms/arena/collectives.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/patterns/ring.h"
#include "reduce/reducer.h"

namespace smddp::algo::arena {

void allReduceDirect(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const size_t es = args.elementSize();
  const size_t chunk = SlotStep::chunkBytes(exec, es);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t bytes = std::min(chunk, args.bytes() - off);
    const size_t count = bytes / es;
    SlotStep step(exec);
    step.acquire();
    std::memcpy(step.mine(), in + off, bytes);
    step.publish(1);
    step.awaitAll(1);
    reduceSlots(step, args, n, out + off, 0, count);
    step.release();
  }
}

void allReduceSplit(Exec& exec, const CollectiveArgs& args) {
  const int n = exec.size();
  const int rank = exec.rank();
  const size_t es = args.elementSize();
  const size_t chunk = SlotStep::chunkBytes(exec, es, 2);
  const auto* in = static_cast<const unsigned char*>(args.send);
  auto* out = static_cast<unsigned char*>(args.recv);
  for (size_t off = 0; off < args.bytes(); off += chunk) {
    const size_t count = std::min(chunk, args.bytes() - off) / es;
    SlotStep step(exec);
    const patterns::Range slice = patterns::ringChunk(count, n, rank);  // slice r is ours
    const size_t first = slice.begin;
    const size_t mineCount = slice.count;
    // Peers read every slice of our slot but ours: ours is reduced straight from the input.
    step.acquire();
    std::memcpy(step.mine(), in + off, first * es);
    std::memcpy(step.mine() + (first + mineCount) * es, in + off + (first + mineCount) * es,
                (count - first - mineCount) * es);
    step.publish(1);
    step.awaitAll(1);
    // Each rank starts at its own input and goes on with the next ranks', so the ranks read
    // different peers' slots at a time (measured 1.1-1.3x faster at 256 KiB-4 MiB, 4 ranks, than
    // all reading slot 0 first). SMDDP_DETERMINISTIC: in rank order, as arena_direct and
    // fixed_order (the same bits).
    unsigned char* acc = step.mine() + first * es;
    const auto sliceOf = [&](int q) -> const unsigned char* {
      return q == rank ? in + off + first * es : step.slotOf(q) + first * es;
    };
    const int start = exec.rankOrder() ? 0 : rank;  // n >= 2: one rank runs locally
    if (mineCount > 0) {
      reduce::reduce(args.dtype, args.op, acc, sliceOf(start), sliceOf((start + 1) % n),
                     mineCount);
    }
    for (int i = 2; i < n && mineCount > 0; ++i) {
      reduce::reduce(args.dtype, args.op, acc, acc, sliceOf((start + i) % n), mineCount);
    }
    if (args.op == ReduceOp::kAvg && mineCount > 0) {
      reduce::finishAverage(args.dtype, acc, mineCount, n);
    }
    step.publish(2);
    for (int i = 0; i < n; ++i) {
      const int q = (rank + i) % n;  // start with our own slice: peers' may still be in flight
      if (q != rank) step.await(q, 2);
      const patterns::Range s = patterns::ringChunk(count, n, q);
      if (s.count > 0) {
        std::memcpy(out + off + s.begin * es, step.slotOf(q) + s.begin * es, s.count * es);
      }
    }
    step.release();
  }
}

}  // namespace smddp::algo::arena
