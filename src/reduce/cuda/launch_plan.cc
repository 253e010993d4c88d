// SPDX-License-Identifier: Apache-2.0
// Launch arithmetic for the CUDA element-wise kernels (see launch_plan.h). Pure integer math.
// Invariant: the plan's pieces partition [0, count); a vector body is only planned when every
// operand reaches a 16-byte boundary after the same number of elements.
#include "reduce/cuda/launch_plan.h"

#include <algorithm>
#include <string>

#include "smddp/error.h"

namespace smddp::reduce {
namespace {

[[noreturn]] void badPlan(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "planLaunch: " + what);
}

// Threads worth launching: each takes kCudaUnroll vectors per iteration, or one edge element.
unsigned pickGrid(const LaunchPlan& p, int smCount) {
  size_t threads = std::max((p.bodyVectors + kCudaUnroll - 1) / kCudaUnroll, p.edgeCount());
  size_t wanted = (threads + kCudaBlockThreads - 1) / kCudaBlockThreads;
  size_t cap = size_t(smCount) * kCudaBlocksPerSm;
  return unsigned(std::clamp<size_t>(wanted, 1, cap));
}

}  // namespace

LaunchPlan planLaunch(const uintptr_t* addrs, int numAddrs, size_t count, size_t elemSize,
                      int smCount) {
  if (elemSize == 0 || elemSize > kCudaVectorBytes || (elemSize & (elemSize - 1)) != 0) {
    badPlan("element size " + std::to_string(elemSize) + " is not 1, 2, 4, 8 or 16");
  }
  if (numAddrs < 1 || addrs == nullptr) badPlan("needs at least one operand address");
  if (smCount < 1) badPlan("multiprocessor count " + std::to_string(smCount) + " must be > 0");

  LaunchPlan p;
  p.count = count;
  p.lanes = kCudaVectorBytes / elemSize;
  uintptr_t misalign = addrs[0] % kCudaVectorBytes;
  bool sameMisalign = true;
  for (int i = 0; i < numAddrs; ++i) {
    if (addrs[i] % elemSize != 0) p.elementAligned = false;
    if (addrs[i] % kCudaVectorBytes != misalign) sameMisalign = false;
  }
  if (p.elementAligned && sameMisalign) {
    // Elements until every operand sits on a 16-byte boundary (exact: elementAligned).
    size_t toBoundary = (kCudaVectorBytes - misalign) % kCudaVectorBytes / elemSize;
    p.head = std::min(count, toBoundary);
    p.bodyVectors = (count - p.head) / p.lanes;
  }
  p.tailStart = p.head + p.bodyVectors * p.lanes;
  if (count > 0) {
    p.block = kCudaBlockThreads;
    p.grid = pickGrid(p, smCount);
  }
  return p;
}

}  // namespace smddp::reduce
