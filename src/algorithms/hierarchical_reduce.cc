// SPDX-License-Identifier: Apache-2.0
// reduce (hier) across H hosts (hierarchical.h), root (r, j): on every host one rank, its carrier
// (hier::carriers: the root on its host; elsewhere the rank of local index j, or the host's
// leader where the hosts hold different numbers of ranks; hier::Rooted), collects its host's part
// through the arena, and the carriers exchange over the network (binomial reduce among H), so
// each host's link carries its host's part once and the network step involves H ranks instead
// of n.
//   Per use every rank copies its input's chunk into its slot; the carrier reduces the L slots in
//   local rank order into its partial (the root: into its output); the carriers reduce the
//   partials to the root. AVG divides by n at the root.
// Identity: the carrier reads every slot of its host (and checks each), the others check the
// carrier's, so ranks in different collectives fail with kMismatch.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"
#include "reduce/reducer.h"

namespace smddp::algo {
using hier::Rooted;

void reduceHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const CollectiveArgs sum = hier::summed(args);
  const size_t es = args.elementSize();
  const size_t bytes = args.bytes();
  unsigned char* partial = nullptr;
  if (r.carrier) {
    partial = r.isRoot ? static_cast<unsigned char*>(args.recv)
                       : static_cast<unsigned char*>(exec.scratch(bytes, 2));
  }
  const auto* in = static_cast<const unsigned char*>(args.send);
  const size_t chunk = arena::SlotStep::chunkBytes(r.local, es);
  for (size_t off = 0; off < bytes; off += chunk) {
    const size_t n = std::min(chunk, bytes - off);
    arena::SlotStep step(r.local);
    step.acquire();
    std::memcpy(step.mine(), in + off, n);
    step.publish(1);
    if (r.carrier) {
      step.awaitAll(1);
      arena::reduceSlots(step, sum, r.local.size(), partial + off, 0, n / es);
    } else {
      step.await(r.index, 1);
    }
    step.release();
  }
  if (!r.carrier) return;
  Exec cross(exec, r.carriers, r.groups.crossSettings, 0);
  CollectiveArgs part = sum;
  part.send = partial;
  part.recv = r.isRoot ? args.recv : nullptr;
  part.root = r.rootHost;
  part.blocks.clear();
  hier::crossAlgorithm(CollectiveKind::kReduce, part.bytes(), static_cast<int>(r.hosts()))
      .run(cross, part);
  cross.waitAll();
  if (r.isRoot && args.op == ReduceOp::kAvg) {
    reduce::finishAverage(args.dtype, args.recv, args.count, exec.size());
  }
}

}  // namespace smddp::algo
