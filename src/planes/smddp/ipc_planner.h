// SPDX-License-Identifier: Apache-2.0
// What the CUDA IPC plans (device_ipc_plan.cc within a host, device_ipc_hosts.cc across hosts)
// share: a Planner that emits one rank's ops and derives the host barriers from the clock
// (ipc_plan.h says how). Internal to those two files.
#pragma once

#include <algorithm>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

#include "planes/smddp/ipc_plan.h"

namespace smddp::planes::ipc {

using algo::CollectiveArgs;

class Planner {
 public:
  Planner(const CollectiveArgs& args, int rank, int size, const IpcScratch& scratch,
          IpcScratchClock& clock)
      : args_(args), rank_(rank), size_(size), scratch_(scratch), clock_(clock) {}

  std::vector<IpcOp> take() { return std::move(ops_); }

  // Area a of rank r, at byte `offset`.
  char* at(int r, int a, size_t offset = 0) const { return scratch_.at(r, a) + offset; }

  // The large area freed earliest (ties: the lower), for the next chunk.
  int pickLarge() const { return clock_.freeAt[1] < clock_.freeAt[0] ? 1 : 0; }
  int pickSmall() const { return clock_.freeAt[3] < clock_.freeAt[2] ? 3 : 2; }

  // Every rank calls these alike, whether or not it copies anything itself.
  void beginWrite(int a) {
    if (clock_.barriers < clock_.freeAt[a]) barrier();
    clock_.dirty[a] = true;
  }
  void beginRead(int a) {
    if (clock_.dirty[a]) barrier();
    clock_.freeAt[a] = clock_.barriers + 1;
  }

  void copy(void* dst, const void* src, size_t bytes) {
    if (bytes == 0 || dst == src) return;
    IpcOp op;
    op.kind = IpcOp::kCopy;
    op.dst = dst;
    op.a = src;
    op.bytes = bytes;
    ops_.push_back(op);
  }
  // dst = source(0) op source(1) op ... op source(size - 1), left to right.
  void reduceInRankOrder(void* dst, size_t count, const std::function<const char*(int)>& source) {
    if (count == 0) return;
    for (int q = 1; q < size_; ++q) {
      IpcOp op;
      op.kind = IpcOp::kReduce;
      op.dst = dst;
      op.a = q == 1 ? source(0) : dst;
      op.b = source(q);
      op.count = count;
      ops_.push_back(op);
    }
    if (args_.op == ReduceOp::kAvg && args_.reduces()) average(dst, count, size_);
  }

  // fn(first, count, area) for each chunk of `count` elements of every block from element
  // `first`, `pieces` blocks' slices a chunk, through the large area freed earliest (its write
  // begun: fn writes, calls beginRead(area) and reads).
  template <typename Fn>
  void chunks(size_t pieces, Fn fn) {
    const size_t per = perChunk(pieces);
    for (size_t first = 0; first < args_.count; first += per) {
      const size_t count = std::min(per, args_.count - first);
      const int area = pickLarge();
      beginWrite(area);
      fn(first, count, area);
    }
  }

  // dst /= divisor, count elements (AVG's last step).
  void average(void* dst, size_t count, int divisor) {
    if (count == 0) return;
    IpcOp op;
    op.kind = IpcOp::kAverage;
    op.dst = dst;
    op.count = count;
    op.divisor = divisor;
    ops_.push_back(op);
  }
  // A host step among this rank's counterparts on the other hosts: `kind` of `count` elements
  // (the call's dtype; SUM for AVG) from `send` to `recv`, both pinned host memory. Not a barrier
  // among the host's ranks: the clock does not move.
  void exchange(CollectiveKind kind, const void* send, void* recv, size_t count) {
    IpcOp op;
    op.kind = IpcOp::kExchange;
    op.step = kind;
    op.a = send;
    op.dst = recv;
    op.count = count;
    ops_.push_back(op);
  }

  const CollectiveArgs& args() const { return args_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  size_t es() const { return args_.elementSize(); }
  // Elements of each block per chunk when a large area holds `pieces` blocks' slices.
  size_t perChunk(size_t pieces) const {
    return std::max<size_t>(1, scratch_.slotBytes / (pieces * es()));
  }

 private:
  void barrier() {
    ops_.push_back(IpcOp{});
    ++clock_.barriers;
    std::fill(std::begin(clock_.dirty), std::end(clock_.dirty), false);
  }

  const CollectiveArgs& args_;
  const int rank_;
  const int size_;
  const IpcScratch& scratch_;
  IpcScratchClock& clock_;
  std::vector<IpcOp> ops_;
};

inline const char* in(const CollectiveArgs& a) { return static_cast<const char*>(a.send); }
inline char* out(const CollectiveArgs& a) { return static_cast<char*>(a.recv); }

// What an all_reduce does with a reduced piece (its buffer, its elements) before the host's ranks
// read it: nothing within one host; across hosts, the exchange with the counterparts.
using Reduced = std::function<void(char* piece, size_t count)>;

// all_reduce (device_ipc_plan.cc). One-shot: every rank reduces the whole buffer from every rank's
// small area into its output. Chunked: per chunk every rank reduces its ring slice of the chunk
// from every rank's `in` area into its `out` area, then copies every rank's slice from their `out`.
void allReduceOneShot(Planner& p, const Reduced& across = nullptr);
void allReduceChunked(Planner& p, const Reduced& across = nullptr);

}  // namespace smddp::planes::ipc
