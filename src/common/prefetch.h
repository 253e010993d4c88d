// SPDX-License-Identifier: Apache-2.0
// prefetchForWrite: asks for the cache lines of [p, p + bytes) in a state this core can write
// without waiting (x86 PREFETCHW, Arm PRFM PST). Used on shared-memory lines a peer read last:
// issued a call ahead, it takes the peer's copies away while this core does other work, so the
// later stores retire at once instead of holding the store buffer (and the next locked
// instruction) for a cross-core round trip.
// A hint only: never faults, and does nothing where the CPU lacks it.
#pragma once

#include <cstddef>

namespace smddp {

constexpr size_t kCacheLine = 64;

inline void prefetchForWrite(const void* p, size_t bytes) {
  const auto* c = static_cast<const char*>(p);
#if defined(__x86_64__) || defined(__i386__)
  // PRFCHW: every AMD64 CPU, Intel since Broadwell (detected as reduce/ detects AVX2).
  if (!__builtin_cpu_supports("prfchw")) return;
  for (size_t off = 0; off < bytes; off += kCacheLine) asm volatile("prefetchw %0" : : "m"(c[off]));
#else
  for (size_t off = 0; off < bytes; off += kCacheLine) __builtin_prefetch(c + off, 1, 3);
#endif
}

}  // namespace smddp
