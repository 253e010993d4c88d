// SPDX-License-Identifier: Apache-2.0
// gather and scatter (hier), mirror images, across H hosts (hierarchical.h), root (r, j): on every
// host one rank, its carrier (hier::carriers: the root on its host; elsewhere the rank of local
// index j, or the host's leader where the hosts hold different numbers of ranks; hier::Rooted),
// collects or hands out its host's part through the arena, and the carriers exchange over the
// network (one message per host, of its L_h blocks), so each host's link carries its host's part
// once and the network step involves H ranks instead of n.
// gather (hier): per use every rank copies a piece of its block into its slot; the carrier packs
//   the host's L blocks in local order (the root: into its place in the host-major whole); the
//   carriers send their packs to the root, which unpacks the whole into the blocks of their ranks.
// scatter (hier): the root packs its blocks host-major; each carrier receives its host's pack;
//   per use the carrier copies a piece of each of its host's L blocks into its slot and every
//   rank copies its own out.
// Identity: the carrier reads every slot of its host (and checks each), the others check the
// carrier's, so ranks in different collectives fail with kMismatch.
#include <cstring>
#include <vector>

#include "algorithms/algorithms.h"
#include "algorithms/hierarchical.h"

namespace smddp::algo {
using hier::Rooted;

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
