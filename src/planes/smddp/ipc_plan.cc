// SPDX-License-Identifier: Apache-2.0
// The ops of a collective through CUDA IPC (ipc_plan.h).
#include "planes/smddp/ipc_plan.h"

#include "planes/smddp/ipc_planner.h"

#include <algorithm>
#include <string>

#include "algorithms/patterns/ring.h"
#include "smddp/error.h"

namespace smddp::planes {
namespace {

using algo::CollectiveArgs;
using ipc::allReduceChunked;
using ipc::allReduceOneShot;
using ipc::in;
using ipc::out;
using ipc::Planner;

// The root's chunk goes through its area; every other rank copies it out.
void broadcast(Planner& p) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const bool root = p.rank() == a.root;
  if (root) p.copy(a.recv, a.send, a.bytes());
  p.chunks(1, [&](size_t first, size_t count, int A) {
    if (root) p.copy(p.at(p.rank(), A), in(a) + first * es, count * es);
    p.beginRead(A);
    if (!root) p.copy(out(a) + first * es, p.at(a.root, A), count * es);
  });
}

// Every rank's chunk goes through its area; the root reduces them in rank order.
void reduce(Planner& p) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  p.chunks(1, [&](size_t first, size_t count, int A) {
    p.copy(p.at(p.rank(), A), in(a) + first * es, count * es);
    p.beginRead(A);
    if (p.rank() == a.root) {
      p.reduceInRankOrder(out(a) + first * es, count, [&](int q) { return p.at(q, A); });
    }
  });
}

// all_gather and gather: every rank's chunk goes through its area; the readers copy every peer's.
void gather(Planner& p, bool everyRank) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const bool reader = everyRank || p.rank() == a.root;
  const auto me = static_cast<size_t>(p.rank());
  if (reader) p.copy(a.block(me), a.send, a.bytes());
  p.chunks(1, [&](size_t first, size_t count, int A) {
    p.copy(p.at(p.rank(), A), in(a) + first * es, count * es);
    p.beginRead(A);
    for (int q = 0; reader && q < p.size(); ++q) {
      if (q == p.rank()) continue;
      p.copy(static_cast<char*>(a.block(static_cast<size_t>(q))) + first * es, p.at(q, A),
             count * es);
    }
  });
}

// The root stages a slice of every other rank's block per chunk; each rank copies its own.
void scatter(Planner& p) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const bool root = p.rank() == a.root;
  const auto me = static_cast<size_t>(p.rank());
  if (root) p.copy(a.recv, a.sendBlock(me), a.bytes());
  p.chunks(static_cast<size_t>(p.size()), [&](size_t first, size_t count, int A) {
    for (int q = 0; root && q < p.size(); ++q) {
      if (q == p.rank()) continue;
      p.copy(p.at(p.rank(), A, static_cast<size_t>(q) * count * es),
             static_cast<const char*>(a.sendBlock(static_cast<size_t>(q))) + first * es,
             count * es);
    }
    p.beginRead(A);
    if (!root) p.copy(out(a) + first * es, p.at(a.root, A, me * count * es), count * es);
  });
}

// reduce_scatter and all_to_all: per chunk every rank stages a slice of each of its n blocks; rank
// r then takes slice r from every rank's area (reducing them in rank order, or one block each).
void exchange(Planner& p, bool reduces) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const auto n = static_cast<size_t>(p.size());
  const auto me = static_cast<size_t>(p.rank());
  p.chunks(n, [&](size_t first, size_t count, int A) {
    if (count == a.count) {  // one chunk: the blocks lie as in the input
      p.copy(p.at(p.rank(), A), a.send, n * count * es);
    } else {
      for (size_t q = 0; q < n; ++q) {
        p.copy(p.at(p.rank(), A, q * count * es), in(a) + (q * a.count + first) * es, count * es);
      }
    }
    p.beginRead(A);
    if (reduces) {
      p.reduceInRankOrder(out(a) + first * es, count,
                          [&](int q) { return p.at(q, A, me * count * es); });
    } else {
      for (int q = 0; q < p.size(); ++q) {
        p.copy(out(a) + (static_cast<size_t>(q) * a.count + first) * es,
               p.at(q, A, me * count * es), count * es);
      }
    }
  });
}

}  // namespace

namespace ipc {

void allReduceOneShot(Planner& p, const Reduced& across) {
  const CollectiveArgs& a = p.args();
  const int s = p.pickSmall();
  p.beginWrite(s);
  p.copy(p.at(p.rank(), s), a.send, a.bytes());
  p.beginRead(s);
  p.reduceInRankOrder(a.recv, a.count, [&](int q) { return p.at(q, s); });
  if (across) across(static_cast<char*>(a.recv), a.count);
}

void allReduceChunked(Planner& p, const Reduced& across) {
  const CollectiveArgs& a = p.args();
  const size_t es = p.es();
  const size_t per = p.perChunk(1);
  for (size_t first = 0; first < a.count; first += per) {
    const size_t count = std::min(per, a.count - first);
    const int inA = p.pickLarge();
    const int outA = 1 - inA;
    p.beginWrite(inA);
    p.copy(p.at(p.rank(), inA), in(a) + first * es, count * es);
    p.beginRead(inA);
    const algo::patterns::Range mine = algo::patterns::ringChunk(count, p.size(), p.rank());
    char* slice = p.at(p.rank(), outA, mine.begin * es);
    p.beginWrite(outA);
    p.reduceInRankOrder(slice, mine.count, [&](int q) { return p.at(q, inA, mine.begin * es); });
    if (across) across(slice, mine.count);
    p.beginRead(outA);
    for (int q = 0; q < p.size(); ++q) {
      const algo::patterns::Range theirs = algo::patterns::ringChunk(count, p.size(), q);
      p.copy(out(a) + (first + theirs.begin) * es, p.at(q, outA, theirs.begin * es),
             theirs.count * es);
    }
  }
}

}  // namespace ipc

bool hasIpcForm(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
    case CollectiveKind::kBroadcast:
    case CollectiveKind::kReduce:
    case CollectiveKind::kAllGather:
    case CollectiveKind::kGather:
    case CollectiveKind::kScatter:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return true;
    default:
      return false;
  }
}

bool ipcFits(const algo::CollectiveArgs& args, int size, size_t slotBytes) {
  switch (args.kind) {
    case CollectiveKind::kScatter:
    case CollectiveKind::kReduceScatter:
    case CollectiveKind::kAllToAll:
      return static_cast<size_t>(size) * args.elementSize() <= slotBytes;
    default:
      return args.elementSize() <= slotBytes;
  }
}

std::vector<IpcOp> planIpc(const algo::CollectiveArgs& args, int rank, int size,
                           const IpcScratch& scratch, IpcScratchClock& clock) {
  const bool ok = hasIpcForm(args.kind) && size >= 2 && args.count > 0 &&
                  ipcFits(args, size, scratch.slotBytes);
  if (!ok) {
    throw Error(ErrorCode::kInvalidArgument,
                errorHead(rank) + ": " + toString(args.kind) + " of " + std::to_string(args.count) +
                    " elements over " + std::to_string(size) + " ranks cannot go through CUDA IPC");
  }
  IpcScratchClock next = clock;  // committed once the whole plan stands
  Planner p(args, rank, size, scratch, next);
  switch (args.kind) {
    case CollectiveKind::kAllReduce:
      if (args.bytes() <= scratch.oneShotBytes) {
        allReduceOneShot(p);
      } else {
        allReduceChunked(p);
      }
      break;
    case CollectiveKind::kBroadcast: broadcast(p); break;
    case CollectiveKind::kReduce: reduce(p); break;
    case CollectiveKind::kAllGather: gather(p, true); break;
    case CollectiveKind::kGather: gather(p, false); break;
    case CollectiveKind::kScatter: scatter(p); break;
    case CollectiveKind::kReduceScatter: exchange(p, true); break;
    default: exchange(p, false); break;  // all_to_all: the last kind hasIpcForm takes
  }
  clock = next;
  return p.take();
}

size_t ipcBarriers(const std::vector<IpcOp>& ops) {
  return static_cast<size_t>(
      std::count_if(ops.begin(), ops.end(), [](const IpcOp& op) { return op.kind == IpcOp::kBarrier; }));
}

size_t ipcSteps(const std::vector<IpcOp>& ops) {
  return static_cast<size_t>(std::count_if(ops.begin(), ops.end(), [](const IpcOp& op) {
    return op.kind == IpcOp::kBarrier || op.kind == IpcOp::kExchange;
  }));
}

}  // namespace smddp::planes
