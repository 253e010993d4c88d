// SPDX-License-Identifier: Apache-2.0
// The argument checks' shared pieces (validate.cc, validate_all_to_all.cc, validate_lists.cc): the
// error every check throws and the per-buffer checks. Internal to the core.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "algorithms/collective.h"
#include "common/call.h"
#include "core/validate.h"
#include "smddp/error.h"
#include "smddp/types.h"

namespace smddp::core::check {

// Error(code): "smddp: rank R/N (host): <collective>: <what>".
[[noreturn]] void fail(const CallSite& at, CollectiveKind kind, ErrorCode code,
                       const std::string& what);
// "send (float32 x 12)".
std::string describe(const char* name, const Buffer& b);
// Names what is wrong with a buffer that failed checkBuffer's compares.
[[gnu::cold, gnu::noinline]] void rejectBuffer(const CallSite& at, CollectiveKind kind,
                                               const char* name, const Buffer& b);

// A usable buffer: data for its count, a valid dtype and memory kind. The detailed checks run
// only when the few compares of the common case fail, which keeps a valid call's check short.
inline void checkBuffer(const CallSite& at, CollectiveKind kind, const char* name,
                        const Buffer& b) {
  const bool valid = (b.data != nullptr || b.count == 0) &&
                     static_cast<unsigned>(b.dtype) < static_cast<unsigned>(kNumDataTypes) &&
                     static_cast<unsigned>(b.memory) <= static_cast<unsigned>(MemoryType::kCuda);
  if (!valid) rejectBuffer(at, kind, name, b);
}

// Records in args the memory of the buffers a call uses: host, or CUDA memory of one device
// ordered by one stream. Throws kInvalidArgument naming two buffers that disagree.
void setMemory(const CallSite& at, CollectiveKind kind, algo::CollectiveArgs& args,
               std::initializer_list<const Buffer*> used);
void setMemory(const CallSite& at, CollectiveKind kind, algo::CollectiveArgs& args,
               const std::vector<Buffer>& list, const Buffer* also);

void checkSameType(const CallSite& at, CollectiveKind kind, const Buffer& send, const Buffer& recv);
// A root in [0, size).
void checkRoot(const CallSite& at, CollectiveKind kind, int root);

inline bool overlaps(const void* a, size_t aBytes, const void* b, size_t bBytes) {
  const auto x = reinterpret_cast<uintptr_t>(a);
  const auto y = reinterpret_cast<uintptr_t>(b);
  return aBytes > 0 && bBytes > 0 && x < y + bBytes && y < x + aBytes;
}

}  // namespace smddp::core::check
