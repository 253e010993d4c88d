// streamCopy: memcpy for destinations that will not be read again soon (a large collective's
// output). On x86-64 it writes with non-temporal stores, which skip the read-for-ownership of
// every destination line (a plain copy into memory that is not in cache reads it first: 3 memory
// transfers per byte instead of 2). Elsewhere, or for small or unaligned-tail parts, plain memcpy.
// Invariant: the copy is globally visible when streamCopy returns (it ends with a store fence).
#pragma once

#include <cstddef>

namespace smddp::reduce {

void streamCopy(void* dst, const void* src, size_t bytes);

}  // namespace smddp::reduce
