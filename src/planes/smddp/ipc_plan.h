// SPDX-License-Identifier: Apache-2.0
// What one rank's device does for a collective through CUDA IPC (ipc_peers.h): a list of copies,
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

namespace smddp::planes {

struct IpcOp {
  // kBarrier: a host barrier among the host's ranks. kExchange (plans across hosts): a host step
  // among this rank's counterparts on the other hosts (its cross group), `step` of `count`
  // elements from `a` to `dst`, pinned host memory. Both are segments of the call: the device
  // records their readiness and waits for their flag.
  enum Kind : uint8_t { kCopy, kReduce, kAverage, kBarrier, kExchange };
  Kind kind = kBarrier;
  void* dst = nullptr;
  const void* a = nullptr;  // kCopy: the source; kExchange: what is sent
  const void* b = nullptr;  // kReduce: dst = a op b
  size_t bytes = 0;         // kCopy
  size_t count = 0;         // kReduce, kAverage, kExchange: elements
  int divisor = 0;          // kAverage: dst /= divisor
  CollectiveKind step = CollectiveKind::kBarrier;  // kExchange: the cross group's collective
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

// The barriers among ops.
size_t ipcBarriers(const std::vector<IpcOp>& ops);
// The host steps among ops (barriers and exchanges): the call's segments.
size_t ipcSteps(const std::vector<IpcOp>& ops);

// Across hosts (device_ipc_hosts.cc): a communicator of H >= 2 hosts with the same number L >= 2
// of ranks each. Within each host the ranks go through each other's scratch as above; between
// hosts only the host's share of the data crosses, each rank exchanging its slice with its
// counterparts (the ranks of its local index) through pinned host memory:
//   all_reduce      per chunk: reduce the rank's ring slice of the chunk over the host (rank
//                   order), copy it to pinned memory, all_reduce it with the counterparts (SUM;
//                   AVG divides by the world on the device after), copy it back, then every rank
//                   copies every slice from its peers' areas (an IPC all-gather).
//   reduce_scatter  per chunk: reduce, over the host, the slices of the H blocks of the rank's
//                   counterparts, copy them to pinned memory, reduce_scatter them with the
//                   counterparts; the rank's own block comes back.
//   all_gather      per chunk: all_gather the rank's slice with its counterparts in pinned memory,
//                   copy the H slices into the rank's area; every rank copies its peers'.
// Each rank moves 1/L of what the staged path moves through PCIe and the network.
struct IpcHosts {
  std::vector<std::vector<int>> ranksOf;  // each host's ranks (the communicator's), by local index
  int host = 0;                           // this rank's host
  int local = 0;                          // this rank's local index
  int hosts() const { return static_cast<int>(ranksOf.size()); }
  int perHost() const { return static_cast<int>(ranksOf[0].size()); }
};

// The collectives with a form across hosts: all_reduce, reduce_scatter, all_gather.
bool hasIpcFormAcrossHosts(CollectiveKind kind);
// Whether args fits areas of slotBytes across `hosts` (one element of every block a chunk takes).
bool ipcFitsAcrossHosts(const algo::CollectiveArgs& args, const IpcHosts& hosts, size_t slotBytes);
// The pinned host memory a plan across hosts needs.
size_t ipcPinnedBytes(const algo::CollectiveArgs& args, const IpcHosts& hosts,
                      const IpcScratch& scratch);
// The ops of this rank (hosts.host, hosts.local) for args; `pinned`: ipcPinnedBytes of pinned
// host memory. The same barriers and exchanges on every rank; advances `clock` as planIpc does.
// Throws Error(kInvalidArgument) for a call without a form across hosts, or that does not fit.
std::vector<IpcOp> planIpcAcrossHosts(const algo::CollectiveArgs& args, const IpcHosts& hosts,
                                      const IpcScratch& scratch, IpcScratchClock& clock,
                                      char* pinned);

}  // namespace smddp::planes
