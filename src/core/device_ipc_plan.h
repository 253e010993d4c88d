// SPDX-License-Identifier: Apache-2.0
// What one rank's device does for a collective through CUDA IPC (device_ipc.h): a list of copies,
// reductions and host barriers, planned on the host before anything is enqueued. Pure (pointers
// are only computed, never dereferenced), so it is unit-tested without a device.
//
// Every rank exposes four scratch areas (two of slotBytes, two of oneShotBytes). A collective moves
// through them in chunks: each rank writes its part of the chunk into one of its areas, a host
// barrier, then every rank reads what it needs from the peers' areas (copies, or reductions in
// rank order so every rank computes the same bits). Which barriers are needed is derived, not
// written by hand: IpcScratchClock follows, on every rank alike, when each area was last written
// and up to which barrier peers may still read it, and the planner inserts a barrier
//   - before a read of an area written since the last barrier (the data must be there), and
//   - before a write to an area whose readers may not have passed a barrier since (they must be
//     done).
// A reader's reads are enqueued before the readiness of its next barrier, so a rank that passed
// barrier b knows every read enqueued before b on every rank is done. Chunks alternate between the
// two large areas, so a chunk costs one barrier (all_reduce: two), and nothing waits between calls.
// Invariant: the planned sequence of area uses and barriers depends only on the call (kind, dtype,
// count, root) and the clock, which every rank advances alike: the same barriers on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "algorithms/collective.h"

namespace smddp::core {

struct IpcOp {
  enum Kind : uint8_t { kCopy, kReduce, kAverage, kBarrier };
  Kind kind = kBarrier;
  void* dst = nullptr;
  const void* a = nullptr;  // kCopy: the source
  const void* b = nullptr;  // kReduce: dst = a op b
  size_t bytes = 0;         // kCopy
  size_t count = 0;         // kReduce, kAverage: elements
  int divisor = 0;          // kAverage: dst /= divisor
};

constexpr int kIpcAreas = 4;  // 0, 1: large (slotBytes); 2, 3: small (oneShotBytes)

// Barrier bookkeeping for this rank's areas; every rank's clock is the same after the same calls.
struct IpcScratchClock {
  uint64_t barriers = 0;                // planned so far on this communicator
  uint64_t freeAt[kIpcAreas] = {};      // writing the area needs barriers >= freeAt
  bool dirty[kIpcAreas] = {};           // written since the last barrier
};

// Where rank r's area a starts (mapped into this process) and how large the areas are.
struct IpcScratch {
  std::function<char*(int rank, int area)> at;
  size_t slotBytes = 0;
  size_t oneShotBytes = 0;
};

// The collectives with a form through CUDA IPC: the equal-block ones (not all_to_allv, send, recv).
bool hasIpcForm(CollectiveKind kind);

// Whether `args` (a CUDA collective of `size` ranks, count > 0) can go through areas of slotBytes:
// the collectives that stage a piece of every rank's block per chunk need room for one element per
// rank.
bool ipcFits(const algo::CollectiveArgs& args, int size, size_t slotBytes);

// The ops of rank `rank` for args (all_reduce, reduce, reduce_scatter, broadcast, all_gather,
// gather, scatter, all_to_all; count > 0, size >= 2, ipcFits); advances `clock`. AVG reduces as
// SUM (kReduce ops carry args.op; the device reduces AVG as SUM), then divides (kAverage).
// Throws Error(kInvalidArgument) for any other call.
std::vector<IpcOp> planIpc(const algo::CollectiveArgs& args, int rank, int size,
                           const IpcScratch& scratch, IpcScratchClock& clock);

// The barriers among ops (the call's host segments).
size_t ipcBarriers(const std::vector<IpcOp>& ops);

}  // namespace smddp::core
