// SPDX-License-Identifier: Apache-2.0
// The fake device's memory. Device memory is a memfd mapped twice: the address handed out is
// mapped PROT_NONE, so any host access through it (a transport or the CPU reducer touching
// "device" memory by mistake) faults at once; the fake device's streams work on a second,
// readable and writable mapping of the same pages (resolve()). Pinned memory is ordinary host
// memory that query() reports as pinned. IPC: another process of the host opens the memfd through
// /proc/<pid>/fd/<fd> and maps it the same two ways.
// Invariants: resolve() accepts a range only inside one live allocation (or host memory); freeing
// or closing an address that is not a live allocation's base throws kInvalidArgument.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "device/device.h"

namespace smddp::device::fake {

class FakeMemory {
 public:
  ~FakeMemory();
  void* allocDevice(size_t bytes, int ordinal);
  void freeDevice(void* p);
  void* allocPinned(size_t bytes);
  void freePinned(void* p);
  PointerInfo query(const void* p) const;
  // The host-accessible address of [p, p + bytes): the shadow mapping for device memory, p itself
  // for host memory. Throws kInvalidArgument when the range leaves a device allocation.
  void* resolve(const void* p, size_t bytes) const;

  IpcMemHandle exportMemory(void* base) const;
  void* openMemory(const IpcMemHandle& handle);
  void closeMemory(void* p);

 private:
  struct Region {
    size_t bytes = 0;   // as asked
    size_t mapped = 0;  // rounded up to pages
    char* shadow = nullptr;
    int fd = -1;
    int ordinal = 0;
    bool opened = false;  // from openMemory: closed, not freed
  };
  void* mapRegion(int fd, size_t bytes, int ordinal, bool opened);
  void unmapRegion(uintptr_t base, bool opened);
  const Region* find(uintptr_t address, uintptr_t* base) const;

  mutable std::mutex mutex_;
  std::map<uintptr_t, Region> regions_;  // by device address
  std::map<uintptr_t, size_t> pinned_;   // base -> bytes
};

}  // namespace smddp::device::fake
