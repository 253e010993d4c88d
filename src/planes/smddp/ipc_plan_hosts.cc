// SPDX-License-Identifier: Apache-2.0
// The ops of a collective through CUDA IPC across hosts (ipc_plan.h: IpcHosts): IPC among
// the host's ranks, and between hosts only each rank's share, exchanged with its counterparts
// through pinned host memory. The Planner (device_ipc_planner.h) works in local indices: its
// rank is the local index, its size the host's L ranks.
#include <algorithm>
#include <string>

#include "algorithms/patterns/ring.h"
#include "planes/smddp/ipc_plan.h"
#include "planes/smddp/ipc_planner.h"
#include "smddp/error.h"

namespace smddp::planes {
namespace {

using algo::CollectiveArgs;
using algo::patterns::Range;
using algo::patterns::ringChunk;
using ipc::in;
using ipc::out;
using ipc::Planner;

// Elements of each block a chunk takes: how many slices a large area holds at once.
size_t slicesPerArea(const CollectiveArgs& args, const IpcHosts& h) {
  switch (args.kind) {
    case CollectiveKind::kAllGather:
      return static_cast<size_t>(h.hosts());
    case CollectiveKind::kReduceScatter:
      return static_cast<size_t>(h.hosts() * h.perHost());
    default:
      return 1;
  }
}

size_t perChunk(const CollectiveArgs& args, const IpcHosts& h, size_t slotBytes) {
  const size_t per = std::max<size_t>(1, slotBytes / (slicesPerArea(args, h) * args.elementSize()));
  return std::min(per, args.count);
}

int worldOf(const IpcHosts& h) { return h.hosts() * h.perHost(); }

// all_reduce: the within-host forms (device_ipc_plan.cc), each reduced piece (the whole buffer
// up to the small area's size, else the rank's ring slice of a chunk) all_reduced with the
// counterparts through pinned memory before the host's ranks read it; AVG divides by the world.
void allReduce(Planner& p, const IpcHosts& h, bool average, char* pinned, bool oneShot) {
  const size_t es = p.es();
  const ipc::Reduced across = [&](char* piece, size_t count) {
    p.copy(pinned, piece, count * es);
    p.exchange(CollectiveKind::kAllReduce, pinned, pinned, count);
    p.copy(piece, pinned, count * es);
    if (average) p.average(piece, count, worldOf(h));
  };
  if (oneShot) {
    ipc::allReduceOneShot(p, across);
  } else {
    ipc::allReduceChunked(p, across);
  }
}

// Per chunk: every rank stages a slice of each of its n blocks; rank l reduces, over the host,
// the slices of its counterparts' H blocks into its other area, and reduce-scatters them with
// the counterparts through pinned memory (H slices out, its own back).
void reduceScatter(Planner& p, const IpcHosts& h, bool average, char* pinned, size_t per) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const auto n = static_cast<size_t>(worldOf(h));
  const auto H = static_cast<size_t>(h.hosts());
  char* back = pinned + H * per * es;
  p.chunks(n, [&](size_t first, size_t count, int A) {
    if (count == a.count) {
      p.copy(p.at(p.rank(), A), a.send, n * count * es);
    } else {
      for (size_t q = 0; q < n; ++q) {
        p.copy(p.at(p.rank(), A, q * count * es), in(a) + (q * a.count + first) * es, count * es);
      }
    }
    p.beginRead(A);
    const int B = 1 - A;
    p.beginWrite(B);
    for (size_t g = 0; g < H; ++g) {
      const auto block = static_cast<size_t>(h.ranksOf[g][static_cast<size_t>(p.rank())]);
      p.reduceInRankOrder(p.at(p.rank(), B, g * count * es), count,
                          [&](int q) { return p.at(q, A, block * count * es); });
    }
    p.copy(pinned, p.at(p.rank(), B), H * count * es);
    p.exchange(CollectiveKind::kReduceScatter, pinned, back, count);
    p.copy(out(a) + first * es, back, count * es);
    if (average) p.average(out(a) + first * es, count, worldOf(h));
  });
}

// Per chunk: the rank's slice all_gathered with its counterparts in pinned memory, the H slices
// into its area; every rank of the host copies every peer's.
void allGather(Planner& p, const IpcHosts& h, char* pinned, size_t per) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const auto H = static_cast<size_t>(h.hosts());
  const auto local = static_cast<size_t>(p.rank());
  const int me = h.ranksOf[static_cast<size_t>(h.host)][local];
  char* gathered = pinned + per * es;
  p.copy(a.block(static_cast<size_t>(me)), a.send, a.bytes());
  p.chunks(H, [&](size_t first, size_t count, int A) {
    p.copy(pinned, in(a) + first * es, count * es);
    p.exchange(CollectiveKind::kAllGather, pinned, gathered, count);
    p.copy(p.at(p.rank(), A), gathered, H * count * es);
    p.beginRead(A);
    for (int q = 0; q < p.size(); ++q) {
      for (size_t g = 0; g < H; ++g) {
        const int r = h.ranksOf[g][static_cast<size_t>(q)];
        if (r == me) continue;
        p.copy(static_cast<char*>(a.block(static_cast<size_t>(r))) + first * es,
               p.at(q, A, g * count * es), count * es);
      }
    }
  });
}

bool evenHosts(const IpcHosts& h) {
  if (h.ranksOf.empty() || h.ranksOf[0].empty()) return false;
  for (const auto& host : h.ranksOf) {
    if (host.size() != h.ranksOf[0].size()) return false;
  }
  return h.host >= 0 && h.host < h.hosts() && h.local >= 0 && h.local < h.perHost();
}

}  // namespace

bool hasIpcFormAcrossHosts(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kReduceScatter ||
         kind == CollectiveKind::kAllGather;
}

bool ipcFitsAcrossHosts(const CollectiveArgs& args, const IpcHosts& hosts, size_t slotBytes) {
  return evenHosts(hosts) && slicesPerArea(args, hosts) * args.elementSize() <= slotBytes;
}

size_t ipcPinnedBytes(const CollectiveArgs& args, const IpcHosts& h, const IpcScratch& scratch) {
  const size_t es = args.elementSize();
  const size_t per = perChunk(args, h, scratch.slotBytes);
  const auto H = static_cast<size_t>(h.hosts());
  const auto L = static_cast<size_t>(h.perHost());
  switch (args.kind) {
    case CollectiveKind::kAllGather:
    case CollectiveKind::kReduceScatter:
      return (H + 1) * per * es;
    default:  // all_reduce: the whole buffer (one-shot) or a ring slice of a chunk
      return std::max(args.bytes() <= scratch.oneShotBytes ? args.bytes() : 0,
                      (per + L - 1) / L * es);
  }
}

std::vector<IpcOp> planIpcAcrossHosts(const CollectiveArgs& args, const IpcHosts& hosts,
                                      const IpcScratch& scratch, IpcScratchClock& clock,
                                      char* pinned) {
  if (!hasIpcFormAcrossHosts(args.kind) || args.count == 0 ||
      !ipcFitsAcrossHosts(args, hosts, scratch.slotBytes)) {
    throw Error(ErrorCode::kInvalidArgument,
                "smddp: local rank " + std::to_string(hosts.local) + " of host " +
                    std::to_string(hosts.host) + ": " + toString(args.kind) + " of " +
                    std::to_string(args.count) + " elements cannot go through CUDA IPC across " +
                    std::to_string(hosts.ranksOf.size()) + " hosts");
  }
  CollectiveArgs sum = args;  // AVG: summed everywhere, divided by the world once at the end
  const bool average = args.op == ReduceOp::kAvg && args.reduces();
  if (average) sum.op = ReduceOp::kSum;
  IpcScratchClock next = clock;  // committed once the whole plan stands
  Planner p(sum, hosts.local, hosts.perHost(), scratch, next);
  const size_t per = perChunk(args, hosts, scratch.slotBytes);
  switch (args.kind) {
    case CollectiveKind::kAllReduce:
      allReduce(p, hosts, average, pinned, args.bytes() <= scratch.oneShotBytes);
      break;
    case CollectiveKind::kReduceScatter: reduceScatter(p, hosts, average, pinned, per); break;
    default: allGather(p, hosts, pinned, per); break;  // the last kind with a form across hosts
  }
  clock = next;
  return p.take();
}

}  // namespace smddp::planes
