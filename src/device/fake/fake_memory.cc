// SPDX-License-Identifier: Apache-2.0
// The fake device's memory (fake_memory.h): memfd pages mapped twice, one mapping inaccessible.
#include "device/fake/fake_memory.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "smddp/error.h"

namespace smddp::device::fake {
namespace {

constexpr uint32_t kIpcMagic = 0x66616b65;  // "fake"

struct IpcMemWire {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t ordinal;
  uint64_t bytes;
};
static_assert(sizeof(IpcMemWire) <= sizeof(IpcMemHandle::bytes));

[[noreturn]] void fail(ErrorCode code, const std::string& what) {
  throw Error(code, "smddp: fake device: " + what);
}

std::string sysError(const char* call) { return std::string(call) + ": " + std::strerror(errno); }

size_t pageRound(size_t bytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

FakeMemory::~FakeMemory() {
  for (auto& [base, r] : regions_) {
    munmap(reinterpret_cast<void*>(base), r.mapped);
    munmap(r.shadow, r.mapped);
    close(r.fd);
  }
  for (auto& [base, bytes] : pinned_) std::free(reinterpret_cast<void*>(base));
}

void* FakeMemory::mapRegion(int fd, size_t bytes, int ordinal, bool opened) {
  const size_t mapped = pageRound(bytes);
  void* device = mmap(nullptr, mapped, PROT_NONE, MAP_SHARED, fd, 0);
  if (device == MAP_FAILED) {
    close(fd);
    fail(ErrorCode::kInternal, sysError("mmap (device view)"));
  }
  void* shadow = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (shadow == MAP_FAILED) {
    munmap(device, mapped);
    close(fd);
    fail(ErrorCode::kInternal, sysError("mmap (shadow view)"));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  regions_[reinterpret_cast<uintptr_t>(device)] =
      Region{bytes, mapped, static_cast<char*>(shadow), fd, ordinal, opened};
  return device;
}

void* FakeMemory::allocDevice(size_t bytes, int ordinal) {
  if (bytes == 0) return nullptr;
  const int fd = memfd_create("smddp-fake-device", MFD_CLOEXEC);
  if (fd < 0) fail(ErrorCode::kInternal, sysError("memfd_create"));
  if (ftruncate(fd, static_cast<off_t>(pageRound(bytes))) != 0) {
    close(fd);
    fail(ErrorCode::kInternal, sysError("ftruncate"));
  }
  return mapRegion(fd, bytes, ordinal, false);
}

void FakeMemory::unmapRegion(uintptr_t base, bool opened) {
  Region r;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = regions_.find(base);
    if (it == regions_.end() || it->second.opened != opened) {
      fail(ErrorCode::kInvalidArgument,
           std::string(opened ? "closeMemory" : "freeDevice") + " of an address that is not " +
               (opened ? "an opened IPC mapping" : "a live device allocation"));
    }
    r = it->second;
    regions_.erase(it);
  }
  munmap(reinterpret_cast<void*>(base), r.mapped);
  munmap(r.shadow, r.mapped);
  close(r.fd);
}

void FakeMemory::freeDevice(void* p) {
  if (p != nullptr) unmapRegion(reinterpret_cast<uintptr_t>(p), false);
}

void* FakeMemory::allocPinned(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = std::aligned_alloc(4096, pageRound(bytes));
  if (p == nullptr) fail(ErrorCode::kInternal, "out of host memory for " + std::to_string(bytes));
  std::lock_guard<std::mutex> lock(mutex_);
  pinned_[reinterpret_cast<uintptr_t>(p)] = bytes;
  return p;
}

void FakeMemory::freePinned(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (pinned_.erase(reinterpret_cast<uintptr_t>(p)) == 0) {
      fail(ErrorCode::kInvalidArgument, "freePinned of an address allocPinned did not return");
    }
  }
  std::free(p);
}

const FakeMemory::Region* FakeMemory::find(uintptr_t address, uintptr_t* base) const {
  auto it = regions_.upper_bound(address);
  if (it == regions_.begin()) return nullptr;
  --it;
  if (address >= it->first + it->second.mapped) return nullptr;
  *base = it->first;
  return &it->second;
}

PointerInfo FakeMemory::query(const void* p) const {
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  uintptr_t base = 0;
  if (const Region* r = find(address, &base)) return {MemoryKind::kDevice, r->ordinal};
  auto it = pinned_.upper_bound(address);
  if (it != pinned_.begin() && address < std::prev(it)->first + std::prev(it)->second) {
    return {MemoryKind::kPinned, -1};
  }
  return {MemoryKind::kHost, -1};
}

void* FakeMemory::resolve(const void* p, size_t bytes) const {
  const auto address = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  uintptr_t base = 0;
  const Region* r = find(address, &base);
  if (r == nullptr) return const_cast<void*>(p);
  if (address + bytes > base + r->bytes) {
    fail(ErrorCode::kInvalidArgument, "a range of " + std::to_string(bytes) + " bytes at offset " +
                                          std::to_string(address - base) +
                                          " leaves its allocation of " + std::to_string(r->bytes));
  }
  return r->shadow + (address - base);
}

IpcMemHandle FakeMemory::exportMemory(void* p) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = regions_.find(reinterpret_cast<uintptr_t>(p));
  if (it == regions_.end()) {
    fail(ErrorCode::kInvalidArgument,
         "exportMemory of an address that is not an allocation's base");
  }
  IpcMemWire wire{kIpcMagic, static_cast<int32_t>(getpid()), it->second.fd, it->second.ordinal,
                  it->second.bytes};
  IpcMemHandle handle;
  std::memcpy(handle.bytes, &wire, sizeof(wire));
  return handle;
}

void* FakeMemory::openMemory(const IpcMemHandle& handle) {
  IpcMemWire wire;
  std::memcpy(&wire, handle.bytes, sizeof(wire));
  if (wire.magic != kIpcMagic) fail(ErrorCode::kInvalidArgument, "not a fake-device IPC handle");
  const std::string path = "/proc/" + std::to_string(wire.pid) + "/fd/" + std::to_string(wire.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fail(ErrorCode::kInternal, sysError(("open " + path).c_str()));
  return mapRegion(fd, static_cast<size_t>(wire.bytes), wire.ordinal, true);
}

void FakeMemory::closeMemory(void* p) {
  if (p != nullptr) unmapRegion(reinterpret_cast<uintptr_t>(p), true);
}

}  // namespace smddp::device::fake
