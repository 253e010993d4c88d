// SPDX-License-Identifier: Apache-2.0
// reduce, gather and scatter across H hosts (hierarchical.h), root (r, j): on every host one
// rank, its carrier (hier::carriers: the root on its host; elsewhere the rank of local index j,
// or the host's leader where the hosts hold different numbers of ranks), collects or hands out
// its host's part through the arena, and the carriers exchange over the network (binomial reduce
// among H; gather and scatter one message per host, of its L_h blocks), so each host's link
// carries its host's part once and the network step involves H ranks instead of n.
//
// reduce (hier): per use every rank copies its input's chunk into its slot; the carrier reduces
//   the L slots in local rank order into its partial (the root: into its output); the carriers
//   reduce the partials to the root. AVG divides by n at the root.
// gather (hier): per use every rank copies a piece of its block into its slot; the carrier packs
//   the host's L blocks in local order (the root: into its place in the host-major whole); the
//   carriers send their packs to the root, which unpacks the whole into the blocks of their ranks.
// scatter (hier): the root packs its blocks host-major; each carrier receives its host's pack;
//   per use the carrier copies a piece of each of its host's L blocks into its slot and every
//   rank copies its own out.
// Identity: the carrier reads every slot of its host (and checks each), the others check the
// carrier's, so ranks in different collectives fail with kMismatch.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

// One rank's view of a rooted collective across hosts: where the root is, every host's carrier,
// this host's ranks (an arena view, no messages), and what this rank is.
struct Rooted {
  const HostGroups& groups;
  int rootHost;
  std::vector<int> carriers;  // one per host, in host order
  const std::vector<size_t>& firsts;  // HostGroups::hostFirsts
  size_t myHost;
  int index;  // this host's carrier's local index
  Exec local;
  size_t perHost;
  bool carrier;
  bool isRoot;

  Rooted(Exec& exec, const CollectiveArgs& args)
      : groups(hier::requireHosts(exec)),
        rootHost(hier::hostOf(exec, groups, args.root)),
        carriers(hier::carriers(groups.layout, args.root)),
        firsts(groups.hostFirsts),
        myHost(static_cast<size_t>(groups.layout.hostOf[static_cast<size_t>(exec.rank())])),
        index(groups.layout.localIndex(carriers[myHost])),
        local(exec, groups.local, groups.localSettings, 0),
        perHost(static_cast<size_t>(local.size())),
        carrier(local.rank() == index),
        isRoot(exec.rank() == args.root) {}

  size_t hosts() const { return carriers.size(); }
  // Host h's pack of `block`-byte blocks: where it starts in the host-major whole, and its size.
  size_t packAt(size_t h, size_t block) const { return firsts[h] * block; }
  size_t packBytes(size_t h, size_t block) const { return (firsts[h + 1] - firsts[h]) * block; }
};

}  // namespace

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

void gatherHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  const size_t n = r.firsts.back();
  // The root's: every host's pack, host-major; its own host's lands in place.
  auto* all = r.isRoot ? static_cast<unsigned char*>(exec.scratch(block * n, 1)) : nullptr;
  unsigned char* pack = nullptr;
  if (r.carrier) {
    pack = r.isRoot ? all + r.packAt(r.myHost, block)
                    : static_cast<unsigned char*>(exec.scratch(block * r.perHost, 2));
  }
  hier::hostGather(r.local, r.index, static_cast<const unsigned char*>(args.send), block, es,
                   pack);
  if (!r.carrier) return;
  Exec cross(exec, r.carriers, r.groups.crossSettings, 0);
  if (!r.isRoot) {
    cross.wait(cross.isend(r.rootHost, 0, pack, r.packBytes(r.myHost, block)));
    return;
  }
  for (size_t h = 0; h < r.hosts(); ++h) {
    if (h == r.myHost) continue;
    cross.irecv(static_cast<int>(h), 0, all + r.packAt(h, block), r.packBytes(h, block));
  }
  cross.waitAll();
  const std::vector<int>& order = r.groups.hostMajor;
  for (size_t k = 0; k < n; ++k) {
    std::memcpy(args.block(static_cast<size_t>(order[k])), all + k * block, block);
  }
}

void scatterHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  unsigned char* pack = nullptr;
  if (r.carrier) {
    Exec cross(exec, r.carriers, r.groups.crossSettings, 0);
    if (r.isRoot) {
      const std::vector<int>& order = r.groups.hostMajor;
      auto* all = static_cast<unsigned char*>(exec.scratch(block * order.size(), 1));
      for (size_t k = 0; k < order.size(); ++k) {
        std::memcpy(all + k * block, args.sendBlock(static_cast<size_t>(order[k])), block);
      }
      for (size_t h = 0; h < r.hosts(); ++h) {
        if (h == r.myHost) continue;
        cross.isend(static_cast<int>(h), 0, all + r.packAt(h, block), r.packBytes(h, block));
      }
      pack = all + r.packAt(r.myHost, block);
    } else {
      pack = static_cast<unsigned char*>(exec.scratch(block * r.perHost, 2));
      cross.irecv(r.rootHost, 0, pack, r.packBytes(r.myHost, block));
    }
    cross.waitAll();
  }
  hier::hostScatter(r.local, r.index, pack, block, es, static_cast<unsigned char*>(args.recv));
}

}  // namespace smddp::algo
