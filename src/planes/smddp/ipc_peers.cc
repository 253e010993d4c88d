// SPDX-License-Identifier: Apache-2.0
// CUDA IPC scratch between the ranks of one host (ipc_peers.h).
#include "planes/smddp/ipc_peers.h"

#include "smddp/error.h"

namespace smddp::planes {

IpcPeers::IpcPeers(device::Device& device, int ordinal, size_t slotBytes)
    : device_(device),
      slotBytes_(slotBytesFor(slotBytes)),
      oneShotBytes_(std::min(kOneShotBytes, slotBytes_)) {
  scratch_ = device.allocDevice(2 * slotBytes_ + 2 * oneShotBytes_, ordinal);
  try {
    handle_ = device.exportMemory(scratch_);
  } catch (...) {
    device.freeDevice(scratch_);
    throw;
  }
}

IpcPeers::~IpcPeers() {
  for (size_t r = 0; r < mapped_.size(); ++r) {
    if (static_cast<int>(r) != self_ && mapped_[r] != nullptr) device_.closeMemory(mapped_[r]);
  }
  device_.freeDevice(scratch_);
}

bool IpcPeers::open(const std::vector<device::IpcMemHandle>& handles, int self, std::string* why) {
  self_ = self;
  mapped_.assign(handles.size(), nullptr);
  for (size_t r = 0; r < handles.size(); ++r) {
    if (static_cast<int>(r) == self) {
      mapped_[r] = scratch_;
      continue;
    }
    try {
      mapped_[r] = device_.openMemory(handles[r]);
    } catch (const std::exception& e) {
      *why = "the scratch of this host's peer " + std::to_string(r) + " (by local index): " +
             e.what();
      for (size_t q = 0; q < r; ++q) {
        if (static_cast<int>(q) != self && mapped_[q] != nullptr) device_.closeMemory(mapped_[q]);
      }
      mapped_.clear();
      return false;
    }
  }
  return true;
}

}  // namespace smddp::planes
