// SPDX-License-Identifier: Apache-2.0
// all_gather, reduce_scatter, broadcast and barrier for a communicator over H hosts with L ranks
// each (hierarchical.h): each host's link carries what the host as a whole must send or receive,
// once, split over its L ranks' cross groups, and everything within a host goes through its arena.
// Rank (h, i) is the rank of local index i on host h (HostGroups::layout.ranksOf[h][i]); its
// cross group is (0, i) .. (H-1, i). The network phase of each is the flat algorithm the selector
// picks for H ranks (bruck or ring, binomial or chain, ring).
//
// all_gather (hier):
//   1. network: rank (h, i) all_gathers its block with its cross group, straight into the output
//      blocks of (0, i) .. (H-1, i);
//   2. arena: every rank copies the H blocks it holds into its slot (a piece of each per use);
//      the host's other ranks copy them out to their places.
//   A host sends its L blocks to every other host once: (H-1) L blocks per host and direction,
//   the least an all_gather can move; no arithmetic, so the result equals the flat one.
// reduce_scatter (hier), the same in reverse:
//   1. arena: per use every rank copies a piece of each of the n blocks of its input into its
//      slot (block of (h, q) at (q H + h) pieces); rank (., i) reduces, in local rank order, the
//      pieces of the blocks of (0, i) .. (H-1, i) from the L slots into H partial blocks;
//   2. network: ring reduce-scatter of the H partial blocks in the cross group, rank (h, i)
//      ending with block h (its own) reduced over every host. AVG divides by n there.
//   Each host sends and receives (H-1) L blocks: as much as the flat ring moves per rank.
// broadcast (hier), root (r, j):
//   1. arena, on the root's host only: the root copies the buffer into its slot (per use); the
//      host's other ranks copy it out;
//   2. network: rank (., i) broadcasts slice i of the buffer (patterns::ringChunk over L) from
//      (r, i) to its cross group;
//   3. arena, on the other hosts: all-gather of the L slices (hier::hostAllGather).
//   Each host receives the buffer once, in L slices over L paths in parallel.
// barrier (hier): every rank publishes its arrival in the arena; the host's leader (local index
//   0) waits for the host's ranks, runs the dissemination barrier with the other hosts' leaders,
//   then publishes again, which releases the others: ceil(log2 H) rounds of one message per
//   host instead of ceil(log2 n) from every rank.
// From kInPlaceMinBytes, on tensors in the host's shareable memory, the arena phases of all_gather,
// reduce_scatter and broadcast read the host's peers' buffers directly (hierarchical_in_place.cc).
// Latency: one arena synchronisation per host (barrier: two) plus the network algorithm's rounds
// among H ranks instead of n; hierarchical_leader.cc has broadcast's and all_gather's forms for
// small messages, with one sender per host.
#include <algorithm>
#include <cstring>

#include "algorithms/algorithms.h"
#include "algorithms/arena/slot_step.h"
#include "algorithms/hierarchical.h"
#include "algorithms/registry.h"
#include "algorithms/ring_pass.h"
#include "reduce/reducer.h"

namespace smddp::algo {
namespace {

using hier::crossAlgorithm;
using hier::pieceOf;

}  // namespace

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

void allGatherHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int index = groups.layout.localIndex(exec.rank());
  {
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    CollectiveArgs part = args;
    part.blocks.clear();
    for (int h = 0; h < hosts; ++h) {
      part.blocks.push_back(args.block(static_cast<size_t>(groups.layout.ranksOf[h][index])));
    }
    crossAlgorithm(CollectiveKind::kAllGather, args.bytes(), hosts).run(cross, part);
    cross.waitAll();
  }
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (hier::allGatherHostInPlace(local, groups, args)) return;
  const int ranksHere = local.size();
  const size_t es = args.elementSize();
  const size_t piece = arena::piecePer(local, es, static_cast<size_t>(hosts), 2) / es;
  const patterns::Range whole{0, args.count};
  for (size_t at = 0; at < args.count; at += piece) {
    const size_t bytes = pieceOf(whole, at, piece) * es;
    arena::SlotStep step(local);
    step.acquire();
    for (int h = 0; h < hosts; ++h) {
      const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][index]);
      const auto* from = static_cast<const unsigned char*>(args.block(owner));
      std::memcpy(step.mine() + static_cast<size_t>(h) * piece * es, from + at * es, bytes);
    }
    step.publish(1);
    for (int k = 1; k < ranksHere; ++k) {
      const int q = (index + k) % ranksHere;
      step.await(q, 1);
      for (int h = 0; h < hosts; ++h) {
        const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][q]);
        auto* to = static_cast<unsigned char*>(args.block(owner));
        std::memcpy(to + at * es, step.slotOf(q) + static_cast<size_t>(h) * piece * es, bytes);
      }
    }
    step.release();
  }
}

void reduceScatterHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int index = groups.layout.localIndex(exec.rank());
  const CollectiveArgs sum = hier::summed(args);
  const size_t es = args.elementSize();
  const size_t blockBytes = args.bytes();
  auto* partials = static_cast<unsigned char*>(exec.scratch(blockBytes * hosts, 2));
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (!hier::hostReduceScatterInPlace(local, groups, sum, partials)) {
    const int ranksHere = local.size();
    const size_t piece =
        arena::piecePer(local, es, static_cast<size_t>(hosts) * static_cast<size_t>(ranksHere)) /
        es;
    const patterns::Range whole{0, args.count};
    const auto* in = static_cast<const unsigned char*>(args.send);
    for (size_t at = 0; at < args.count; at += piece) {
      const size_t count = pieceOf(whole, at, piece);
      arena::SlotStep step(local);
      step.acquire();
      for (int q = 0; q < ranksHere; ++q) {
        for (int h = 0; h < hosts; ++h) {
          const auto owner = static_cast<size_t>(groups.layout.ranksOf[h][q]);
          std::memcpy(step.mine() + static_cast<size_t>(q * hosts + h) * piece * es,
                      in + owner * blockBytes + at * es, count * es);
        }
      }
      step.publish(1);
      step.awaitAll(1);
      for (int h = 0; h < hosts; ++h) {
        arena::reduceSlots(step, sum, ranksHere, partials + h * blockBytes + at * es,
                           static_cast<size_t>(index * hosts + h) * piece * es, count);
      }
      step.release();
    }
  }
  Exec cross(exec, groups.cross, groups.crossSettings, 0);
  const size_t total = args.count * static_cast<size_t>(hosts);
  const BlockLayout blocks = BlockLayout::split(partials, total, hosts, es);
  const RingGeometry geo = ringGeometry(cross, blocks);
  requireTagRoom(cross, patterns::ringPassMessages(hosts, geo.segsPerBlock),
                 "hier reduce_scatter");
  reduceScatterRingPass(cross, sum, blocks, blocks, args.recv, geo, hosts - 1, 0);
  cross.waitAll();
  if (args.op == ReduceOp::kAvg) {
    reduce::finishAverage(args.dtype, args.recv, args.count, exec.size());
  }
}

void broadcastHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  const int hosts = static_cast<int>(groups.layout.ranksOf.size());
  const int rootHost = hier::hostOf(exec, groups, args.root);  // the core checked root
  const int myHost = groups.layout.hostOf[static_cast<size_t>(exec.rank())];
  const size_t es = args.elementSize();
  auto* out = static_cast<unsigned char*>(args.recv);
  Exec local(exec, groups.local, groups.localSettings, 0);
  if (myHost == rootHost) {
    const int root = groups.layout.localIndex(args.root);
    const auto* in = static_cast<const unsigned char*>(args.send);
    if (!hier::hostBroadcastInPlace(local, root, args)) {
      hier::hostBroadcast(local, root, in, out, args.bytes(), es);
      if (local.rank() == root && !args.inPlace()) std::memcpy(out, in, args.bytes());
    }
  }
  const patterns::Range slice = patterns::ringChunk(args.count, local.size(), local.rank());
  if (slice.count > 0) {  // the same for the whole cross group
    Exec cross(exec, groups.cross, groups.crossSettings, 0);
    CollectiveArgs part = args;
    part.send = part.recv = out + slice.begin * es;
    part.count = slice.count;
    part.root = rootHost;
    crossAlgorithm(CollectiveKind::kBroadcast, part.bytes(), hosts).run(cross, part);
    cross.waitAll();
  }
  if (myHost != rootHost && !hier::hostAllGatherInPlace(local, args)) {
    hier::hostAllGather(local, args.count, es, out);
  }
}

void barrierHier(Exec& exec, const CollectiveArgs& args) {
  const HostGroups& groups = hier::requireHosts(exec);
  Exec local(exec, groups.local, groups.localSettings, 0);
  arena::SlotStep step(local);
  step.acquire();
  step.publish(1);
  if (local.rank() == 0) {
    step.awaitAll(1);
    {
      Exec cross(exec, groups.cross, groups.crossSettings, 0);
      barrierDissemination(cross, args);
      cross.waitAll();
    }
    step.publish(2);
  } else {
    step.await(0, 1);
    step.await(0, 2);
  }
  step.release();
}

}  // namespace smddp::algo
