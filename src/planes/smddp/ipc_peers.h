// SPDX-License-Identifier: Apache-2.0
// CUDA IPC between the ranks of one host: each rank allocates a device scratch once (four areas:
// two of slotBytes, two of oneShotBytes), exports it, and maps every peer's. A collective on
// device memory then runs on the devices, each rank copying its part into its own areas and
// reading the peers' directly (no host memory, no network), between host barriers; what each rank
// enqueues, and where the barriers go, is planned by ipc_plan.h.
// The barriers are ordinary host collectives of the communicator, gated and released like the
// staging segments (stager.h), so the host never blocks on the device. torch's own
// allocations are never IPC-mapped: only the scratch is exported.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "planes/smddp/ipc_plan.h"
#include "device/device.h"

namespace smddp::planes {

class IpcPeers {
 public:
  static constexpr size_t kOneShotBytes = 64 * 1024;

  // Allocates and exports this rank's scratch: two areas of slotBytes each (rounded up to 256) and
  // two of oneShotBytes().
  IpcPeers(device::Device& device, int ordinal, size_t slotBytes);
  // The large areas' size for a requested slotBytes (rounded up to 256: every area stays aligned).
  static size_t slotBytesFor(size_t slotBytes) { return (slotBytes + 255) / 256 * 256; }
  ~IpcPeers();
  IpcPeers(const IpcPeers&) = delete;
  IpcPeers& operator=(const IpcPeers&) = delete;

  const device::IpcMemHandle& handle() const { return handle_; }
  size_t slotBytes() const { return slotBytes_; }
  size_t oneShotBytes() const { return oneShotBytes_; }
  // Maps every peer's scratch from its handle (handles[i], this rank's own at `self` included;
  // i: the rank, or the local index across hosts); false with `why` when one cannot be opened
  // (then nothing stays mapped).
  bool open(const std::vector<device::IpcMemHandle>& handles, int self, std::string* why);
  // Peer `rank`'s area a (0..kIpcAreas-1; rank: the index open() was given), in this process's
  // address space.
  char* area(int rank, int a) const {
    const auto k = static_cast<size_t>(a);
    return static_cast<char*>(mapped_[static_cast<size_t>(rank)]) +
           std::min<size_t>(k, 2) * slotBytes_ + (k > 2 ? oneShotBytes_ : 0);
  }
  // The areas as the planner sees them, and its bookkeeping (the same on every rank).
  IpcScratch scratch() const {
    return IpcScratch{[this](int rank, int a) { return area(rank, a); }, slotBytes_,
                      oneShotBytes_};
  }
  IpcScratchClock& clock() { return clock_; }

 private:
  device::Device& device_;
  size_t slotBytes_;
  size_t oneShotBytes_;
  IpcScratchClock clock_;
  void* scratch_ = nullptr;
  device::IpcMemHandle handle_;
  int self_ = -1;
  std::vector<void*> mapped_;  // by rank; mapped_[self_] == scratch_
};

}  // namespace smddp::planes
