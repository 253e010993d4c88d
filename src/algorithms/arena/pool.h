// SPDX-License-Identifier: Apache-2.0
// Host memory that the other ranks of the host can map (one pool per process): tensors allocated here (torch's
// Backend::allocateTensor, Communicator::allocateShared) are read and written in place by their
// peers' collectives (pooled.cc) instead of being copied through the arena's slots.
//
// Each block is a memfd of its own, mapped here and by a peer as /proc/<pid>/fd/<fd> the first
// time a collective hands it a reference (PoolRef) to a buffer inside it; the peer keeps it
// mapped. Sizes are rounded to classes (powers of two up to 1 MiB, then whole MiB), and a freed
// block stays for the next allocation of its class: peers may hold it mapped, and steady training
// allocates the same sizes each step. Blocks go with the pool (its last owner: the communicator
// and every tensor still allocated).
// Thread-safe: tensors are allocated and freed on the caller's threads while the engine locates
// and maps buffers.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

namespace smddp::algo::arena {

// Where a buffer lies, as a peer maps it (a few words in an arena slot). pid 0: not pool memory.
struct PoolRef {
  int32_t pid = 0;
  int32_t fd = -1;
  uint64_t pool = 0;        // the pool's nonce (a pid may be reused by a later process)
  uint64_t block = 0;       // the block's id in its pool (never reused)
  uint64_t blockBytes = 0;
  uint64_t offset = 0;      // of the buffer in the block
  bool inPool() const { return pid != 0; }
};

class Pool {
 public:
  // The process's pool: every communicator of the process allocates from it and finds tensors in
  // it, so a tensor allocated through one group is shared on every group.
  static std::shared_ptr<Pool> process();
  Pool();
  ~Pool();
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  // `bytes` (> 0; 0 takes one byte) of shareable memory, page-aligned; Error(kInternal) naming
  // the system call when the machine has no more.
  void* allocate(size_t bytes);
  // Gives back what allocate() returned (kept for the next allocation of its class).
  void release(void* p);
  // The block holding all of [p, p + bytes), or a PoolRef with pid 0 (bytes 0: never pool).
  PoolRef locate(const void* p, size_t bytes) const;
  // A peer's buffer mapped into this process (each block mapped once, kept); throws
  // Error(kInternal) naming the block when it cannot be opened (another pid namespace, gone).
  unsigned char* map(const PoolRef& ref);

  struct Stats {
    uint64_t allocatedBytes = 0;  // in tensors now
    uint64_t cachedBytes = 0;     // freed, kept for reuse
    uint64_t blocks = 0;
    uint64_t peerMappedBytes = 0;  // peers' blocks mapped here
    uint64_t inPlaceCalls = 0;     // collectives that ran in place on it (pooled.cc)
  };
  Stats stats() const;
  // The block size an allocation of `bytes` takes.
  static size_t sizeClass(size_t bytes);
  void countInPlace() { inPlace_.fetch_add(1, std::memory_order_relaxed); }

 private:
  struct Block {
    unsigned char* base = nullptr;
    size_t bytes = 0;
    int fd = -1;
    uint64_t id = 0;
    bool used = false;
  };
  mutable std::mutex mutex_;
  std::map<uintptr_t, Block> blocks_;          // by base address
  std::multimap<size_t, uintptr_t> free_;      // free blocks by size
  std::map<uint64_t, uintptr_t> byId_;         // every block's base by its id
  // Peers' blocks mapped here, by (pool nonce, block id).
  std::map<std::pair<uint64_t, uint64_t>, std::pair<unsigned char*, size_t>> peers_;
  uint64_t nextId_ = 1;
  int32_t pid_;
  uint64_t nonce_;
  std::atomic<uint64_t> inPlace_{0};
};

}  // namespace smddp::algo::arena
