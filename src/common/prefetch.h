// prefetchForWrite: asks for a cache line in a state this core can write without waiting (x86
// PREFETCHW, Arm PRFM PST). Used on shared-memory lines a peer read last: issued a call ahead,
// it takes the peer's copy away while this core does other work, so the later stores retire at
// once instead of holding the store buffer (and the next locked instruction) for a cross-core
// round trip.
// A hint only: never faults, and does nothing where the CPU lacks it.
#pragma once

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace smddp {

#if defined(__x86_64__) || defined(__i386__)
// CPUID 0x80000001 ECX bit 8 (PRFCHW): every AMD64 CPU, Intel since Broadwell.
inline bool cpuHasPrefetchw() {
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) != 0 && (c & (1u << 8)) != 0;
  }();
  return has;
}

inline void prefetchForWrite(const void* p) {
  if (cpuHasPrefetchw()) asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
}
#else
inline void prefetchForWrite(const void* p) { __builtin_prefetch(p, 1, 3); }
#endif

}  // namespace smddp
