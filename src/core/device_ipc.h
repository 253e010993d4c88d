// SPDX-License-Identifier: Apache-2.0
// CUDA IPC between the ranks of one host: each rank allocates a device scratch once ([in | out],
// slotBytes each), exports it, and maps every peer's. all_reduce on device memory then runs on the
// device, reading peers' scratch directly (no host memory, no network), chunk by chunk:
//   copy the chunk into my `in` -> host barrier A -> I reduce my slice of the chunk from every
//   rank's `in`, in rank order (same bits on every rank), into my `out` -> host barrier B -> I copy
//   every rank's reduced slice from its `out` into my output.
// The barriers are ordinary host collectives of the communicator, gated and released like the
// staging segments (device_stager.h), so the host never blocks on the device.
// An all_reduce of at most oneShotBytes() is one-shot instead: copy into my `small[k % 2]` (k
// counts the one-shot calls) -> host barrier -> every rank reduces the whole buffer from every
// rank's `small[k % 2]`, in rank order, into its output. One barrier, not two per chunk.
// Invariants: my `in` is rewritten (the next chunk's copy) only after I passed B, which every peer
// enters after its reads of my `in`; my `out` is rewritten only after I passed the next A, which
// every peer enters after its reads of my `out`; my `small[s]` is rewritten two one-shot calls
// later, after I passed the barrier of the call in between, which every peer enters after its
// reads of it (stream order on each rank). torch's own allocations are never IPC-mapped: only the
// scratch is exported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"

namespace smddp::core {

class IpcPeers {
 public:
  static constexpr size_t kOneShotBytes = 64 * 1024;

  // Allocates and exports this rank's scratch: `in` and `out` of slotBytes each (rounded up to
  // 256), and two `small` areas of oneShotBytes().
  IpcPeers(device::Device& device, int ordinal, size_t slotBytes);
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  const device::IpcMemHandle& handle() const { return handle_; }
  size_t slotBytes() const { return slotBytes_; }
  size_t oneShotBytes() const { return oneShotBytes_; }
  // The parity of the next one-shot call (0, 1, 0, ...): the same on every rank, which issue the
  // same calls.
  int nextOneShot() { return static_cast<int>(oneShots_++ % 2); }
  // Maps every peer's scratch from its handle (handles[rank], this rank's own included);
  // false with `why` when one cannot be opened (then nothing stays mapped).
  bool open(const std::vector<device::IpcMemHandle>& handles, int self, std::string* why);
  // Rank `rank`'s `in` and `out`, in this process's address space.
  char* in(int rank) const { return static_cast<char*>(mapped_[static_cast<size_t>(rank)]); }
  char* out(int rank) const { return in(rank) + slotBytes_; }
  char* small(int rank, int parity) const {
    return out(rank) + slotBytes_ + static_cast<size_t>(parity) * oneShotBytes_;
  }

 private:
  device::Device& device_;
  size_t slotBytes_;
  size_t oneShotBytes_;
  uint64_t oneShots_ = 0;
  void* scratch_ = nullptr;
  device::IpcMemHandle handle_;
  int self_ = -1;
  std::vector<void*> mapped_;  // by rank; mapped_[self_] == scratch_
};

}  // namespace smddp::core
