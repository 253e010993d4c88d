// SPDX-License-Identifier: Apache-2.0
// Launch arithmetic for the CUDA element-wise kernels, kept free of CUDA so it is unit-tested on
// any machine. A call on (pointers, count, element size) is split into a scalar head, a body of
// 16-byte vectors and a scalar tail, and given a grid for a grid-stride loop.
// Invariants: head, body and tail cover [0, count) exactly once, in that order; when the body is
// non-empty every operand's body start is 16-byte aligned (all operands share one misalignment);
// when operands disagree on their misalignment everything is head/tail (scalar) work.
#pragma once

#include <cstddef>
#include <cstdint>

namespace smddp::reduce {

constexpr size_t kCudaVectorBytes = 16;  // one ld.global.v4 / st.global.v4 per operand
constexpr unsigned kCudaBlockThreads = 256;
// Knobs to tune on the GPU machine: resident blocks per SM the grid asks for, and vectors each
// thread keeps in flight per loop iteration (memory-level parallelism).
constexpr unsigned kCudaBlocksPerSm = 8;
constexpr unsigned kCudaUnroll = 2;

struct LaunchPlan {
  size_t count = 0;            // elements in the call
  size_t lanes = 0;            // elements per 16-byte vector
  size_t head = 0;             // elements [0, head) are scalar work
  size_t bodyVectors = 0;      // then vectors covering [head, tailStart)
  size_t tailStart = 0;        // elements [tailStart, count) are scalar work
  bool elementAligned = true;  // every pointer is a multiple of the element size
  unsigned grid = 0;           // 0 when there is nothing to launch
  unsigned block = 0;

  size_t edgeCount() const { return head + (count - tailStart); }
  bool vectorized() const { return bodyVectors > 0; }
};

// addrs: the address of every operand (dst, a, b — or one buffer). elemSize: 1, 2, 4 or 8.
// smCount: multiprocessors on the device (> 0). Throws Error(kInvalidArgument) on a bad elemSize,
// numAddrs or smCount. A plan with elementAligned == false must not be launched.
LaunchPlan planLaunch(const uintptr_t* addrs, int numAddrs, size_t count, size_t elemSize,
                      int smCount);

}  // namespace smddp::reduce
