// SPDX-License-Identifier: Apache-2.0
// CUDA IPC between the ranks of one host: each rank allocates a device scratch once ([in | out],
// slotBytes each), exports it, and maps every peer's. all_reduce on device memory then runs on the
// device, reading peers' scratch directly (no host memory, no network), chunk by chunk:
//   copy the chunk into my `in` -> host barrier A -> I reduce my slice of the chunk from every
//   rank's `in`, in rank order (same bits on every rank), into my `out` -> host barrier B -> I copy
//   every rank's reduced slice from its `out` into my output.
// The barriers are ordinary host collectives of the communicator, gated and released like the
// staging segments (device_stager.h), so the host never blocks on the device.
// Invariants: my `in` is rewritten (the next chunk's copy) only after I passed B, which every peer
// enters after its reads of my `in`; my `out` is rewritten only after I passed the next A, which
// every peer enters after its reads of my `out` (stream order on each rank). torch's own
// allocations are never IPC-mapped: only the scratch is exported.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"

namespace smddp::core {

class IpcPeers {
 public:
  // Allocates and exports this rank's scratch: `in` and `out`, slotBytes each.
  IpcPeers(device::Device& device, int ordinal, size_t slotBytes);
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  const device::IpcMemHandle& handle() const { return handle_; }
  size_t slotBytes() const { return slotBytes_; }
  // Maps every peer's scratch from its handle (handles[rank], this rank's own included);
  // false with `why` when one cannot be opened (then nothing stays mapped).
  bool open(const std::vector<device::IpcMemHandle>& handles, int self, std::string* why);
  // Rank `rank`'s `in` and `out`, in this process's address space.
  char* in(int rank) const { return static_cast<char*>(mapped_[static_cast<size_t>(rank)]); }
  char* out(int rank) const { return in(rank) + slotBytes_; }

 private:
  device::Device& device_;
  size_t slotBytes_;
  void* scratch_ = nullptr;
  device::IpcMemHandle handle_;
  int self_ = -1;
  std::vector<void*> mapped_;  // by rank; mapped_[self_] == scratch_
};

// The elements of slice `r` of a chunk of `count` elements cut into `ranks` slices: the first
// count % ranks slices have one more.
inline void sliceOf(size_t count, int ranks, int r, size_t* first, size_t* length) {
  const size_t n = static_cast<size_t>(ranks);
  const size_t base = count / n;
  const size_t extra = count % n;
  const size_t idx = static_cast<size_t>(r);
  *first = idx * base + std::min(idx, extra);
  *length = base + (idx < extra ? 1 : 0);
}

}  // namespace smddp::core
