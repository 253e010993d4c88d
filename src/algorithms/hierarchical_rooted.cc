// SPDX-License-Identifier: Apache-2.0
// reduce, gather and scatter across H hosts of L ranks (hierarchical.h), root (r, j): on every
// host the rank of local index j, the root's counterpart, collects or hands out its host's part
// through the arena, and the counterparts exchange over the network with the flat algorithm for
// H ranks (binomial reduce, linear gather and scatter), so each host's link carries its host's
// part once and the network step involves H ranks instead of n.
//
// reduce (hier): per use every rank copies its input's chunk into its slot; the counterpart
//   reduces the L slots in local rank order into its partial (the root: into its output); the
//   counterparts reduce the partials to the root. AVG divides by n at the root.
// gather (hier): per use every rank copies a piece of its block into its slot; the counterpart
//   packs the host's L blocks in local order; the counterparts gather the packs to the root, which
//   unpacks them into the blocks of their ranks.
// scatter (hier): the root packs its blocks host by host; the counterparts scatter the packs; per
//   use each counterpart copies a piece of each of its host's L blocks into its slot and every
//   rank copies its own out.
// Identity: the counterpart reads every slot of its host (and checks each), the others check the
// counterpart's, so ranks in different collectives fail with kMismatch.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

// One rank's view of a rooted collective across hosts: where the root is (its host and local
// index, the counterparts'), this host's ranks (an arena view, no messages), and what this rank
// is.
struct Rooted {
  const HostGroups& groups;
  int rootHost;
  int index;
  Exec local;
  size_t perHost;
  size_t hosts;
  bool counterpart;
  bool isRoot;

  Rooted(Exec& exec, const CollectiveArgs& args)
      : groups(hier::requireHosts(exec)),
        rootHost(hier::hostOf(exec, groups, args.root)),
        index(groups.layout.localIndex(args.root)),
        local(exec, groups.local, groups.localSettings, 0),
        perHost(static_cast<size_t>(local.size())),
        hosts(groups.layout.ranksOf.size()),
        counterpart(local.rank() == index),
        isRoot(exec.rank() == args.root) {}
};

// Runs the flat `kind` among the counterparts (this rank's cross group), rooted at the root's host.
void crossRooted(Exec& exec, const HostGroups& groups, CollectiveKind kind, CollectiveArgs part,
                 int rootHost) {
  Exec cross(exec, groups.cross, groups.crossSettings, 0);
  part.root = rootHost;
  part.blocks.clear();
  hier::crossAlgorithm(kind, part.bytes(), static_cast<int>(groups.layout.ranksOf.size()))
      .run(cross, part);
  cross.waitAll();
}

}  // namespace

void reduceHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const CollectiveArgs sum = hier::summed(args);
  const size_t es = args.elementSize();
  const size_t bytes = args.bytes();
  unsigned char* partial = nullptr;
  if (r.counterpart) {
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
    if (r.counterpart) {
      step.awaitAll(1);
      arena::reduceSlots(step, sum, r.local.size(), partial + off, 0, n / es);
    } else {
      step.await(r.index, 1);
    }
    step.release();
  }
  if (!r.counterpart) return;
  CollectiveArgs part = sum;
  part.send = partial;
  part.recv = r.isRoot ? args.recv : nullptr;
  crossRooted(exec, r.groups, CollectiveKind::kReduce, part, r.rootHost);
  if (r.isRoot && args.op == ReduceOp::kAvg) {
    reduce::finishAverage(args.dtype, args.recv, args.count, exec.size());
  }
}

void gatherHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  auto* pack =
      r.counterpart ? static_cast<unsigned char*>(exec.scratch(block * r.perHost, 2)) : nullptr;
  hier::hostGather(r.local, r.index, static_cast<const unsigned char*>(args.send), block, es,
                   pack);
  if (!r.counterpart) return;
  auto* all = r.isRoot
                  ? static_cast<unsigned char*>(exec.scratch(block * r.perHost * r.hosts, 1))
                  : nullptr;
  CollectiveArgs part = args;
  part.send = pack;
  part.recv = all;
  part.count = args.count * r.perHost;
  crossRooted(exec, r.groups, CollectiveKind::kGather, part, r.rootHost);
  for (size_t k = 0; r.isRoot && k < r.perHost * r.hosts; ++k) {
    const auto owner = static_cast<size_t>(r.groups.layout.ranksOf[k / r.perHost][k % r.perHost]);
    std::memcpy(args.block(owner), all + k * block, block);
  }
}

void scatterHier(Exec& exec, const CollectiveArgs& args) {
  Rooted r(exec, args);
  const size_t es = args.elementSize();
  const size_t block = args.bytes();
  unsigned char* pack = nullptr;
  if (r.counterpart) {
    pack = static_cast<unsigned char*>(exec.scratch(block * r.perHost, 2));
    auto* all = r.isRoot
                    ? static_cast<unsigned char*>(exec.scratch(block * r.perHost * r.hosts, 1))
                    : nullptr;
    for (size_t k = 0; r.isRoot && k < r.perHost * r.hosts; ++k) {
      const auto owner = static_cast<size_t>(r.groups.layout.ranksOf[k / r.perHost][k % r.perHost]);
      std::memcpy(all + k * block, args.sendBlock(owner), block);
    }
    CollectiveArgs part = args;
    part.send = all;
    part.recv = pack;
    part.count = args.count * r.perHost;
    crossRooted(exec, r.groups, CollectiveKind::kScatter, part, r.rootHost);
  }
  hier::hostScatter(r.local, r.index, pack, block, es, static_cast<unsigned char*>(args.recv));
}

}  // namespace smddp::algo
