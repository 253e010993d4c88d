// SPDX-License-Identifier: Apache-2.0
// The shareable memory pool (pool.h).
#include "algorithms/arena/pool.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <string>

#include "smddp/error.h"

namespace smddp::algo::arena {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

[[noreturn]] void fail(const std::string& what) {
  throw Error(ErrorCode::kInternal, "smddp: shared tensor memory: " + what + ": " +
                                        std::strerror(errno));
}

}  // namespace

std::shared_ptr<Pool> Pool::process() {
  static const std::shared_ptr<Pool> pool = std::make_shared<Pool>();
  return pool;
}

Pool::Pool() : pid_(static_cast<int32_t>(::getpid())) {
  std::random_device random;
  nonce_ = (static_cast<uint64_t>(random()) << 32) ^ random() ^
           static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

Pool::~Pool() {
  for (auto& [base, b] : blocks_) {
    munmap(b.base, b.bytes);
    close(b.fd);
  }
  for (auto& [key, m] : peers_) munmap(m.first, m.second);
}

size_t Pool::sizeClass(size_t bytes) {
  if (bytes <= 4096) return 4096;
  if (bytes <= kMiB) {
    size_t c = 8192;
    while (c < bytes) c *= 2;
    return c;
  }
  return (bytes + kMiB - 1) / kMiB * kMiB;
}

void* Pool::allocate(size_t bytes) {
  const size_t size = sizeClass(bytes);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = free_.find(size);
    if (it != free_.end()) {
      Block& b = blocks_.at(it->second);
      free_.erase(it);
      b.used = true;
      return b.base;
    }
  }
  const int fd = memfd_create("smddp-tensor", MFD_CLOEXEC);
  if (fd < 0) fail("memfd_create");
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const int err = errno;
    close(fd);
    errno = err;
    fail("ftruncate to " + std::to_string(size) + " bytes");
  }
  void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int err = errno;
    close(fd);
    errno = err;
    fail("mmap of " + std::to_string(size) + " bytes");
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Block b{static_cast<unsigned char*>(base), size, fd, nextId_++, true};
  blocks_[reinterpret_cast<uintptr_t>(base)] = b;
  byId_[b.id] = reinterpret_cast<uintptr_t>(base);
  return base;
}

void Pool::release(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = blocks_.find(reinterpret_cast<uintptr_t>(p));
  if (it == blocks_.end() || !it->second.used) {
    throw Error(ErrorCode::kInvalidArgument,
                "smddp: shared tensor memory: release of an address it did not hand out");
  }
  it->second.used = false;
  free_.emplace(it->second.bytes, it->first);
}

PoolRef Pool::locate(const void* p, size_t bytes) const {
  PoolRef ref;
  if (p == nullptr || bytes == 0) return ref;
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = blocks_.upper_bound(at);
  if (it == blocks_.begin()) return ref;
  --it;
  const Block& b = it->second;
  if (!b.used || at + bytes > it->first + b.bytes) return ref;
  ref.pid = pid_;
  ref.fd = b.fd;
  ref.pool = nonce_;
  ref.block = b.id;
  ref.blockBytes = b.bytes;
  ref.offset = at - it->first;
  return ref;
}

unsigned char* Pool::map(const PoolRef& ref) {
  const std::pair<uint64_t, uint64_t> key{ref.pool, ref.block};
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (ref.pool == nonce_) {  // this process's own block (ranks that are threads of one process)
      const auto own = byId_.find(ref.block);
      if (own != byId_.end()) return reinterpret_cast<unsigned char*>(own->second) + ref.offset;
    }
    const auto it = peers_.find(key);
    if (it != peers_.end()) return it->second.first + ref.offset;
  }
  const std::string path = "/proc/" + std::to_string(ref.pid) + "/fd/" + std::to_string(ref.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) fail("open " + path + " (a peer's block " + std::to_string(ref.block) + ")");
  void* base = mmap(nullptr, ref.blockBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  const int err = errno;
  close(fd);  // the mapping keeps the memory
  if (base == MAP_FAILED) {
    errno = err;
    fail("mmap of " + path);
  }
  std::lock_guard<std::mutex> lock(mutex_);
  const auto [it, fresh] = peers_.emplace(
      key, std::make_pair(static_cast<unsigned char*>(base), static_cast<size_t>(ref.blockBytes)));
  if (!fresh) munmap(base, ref.blockBytes);  // another thread mapped it meanwhile
  return it->second.first + ref.offset;
}

Pool::Stats Pool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s;
  for (const auto& [base, b] : blocks_) {
    (b.used ? s.allocatedBytes : s.cachedBytes) += b.bytes;
  }
  s.blocks = blocks_.size();
  for (const auto& [key, m] : peers_) s.peerMappedBytes += m.second;
  s.inPlaceCalls = inPlace_.load(std::memory_order_relaxed);
  return s;
}

}  // namespace smddp::algo::arena
