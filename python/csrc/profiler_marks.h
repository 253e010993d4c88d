// SPDX-License-Identifier: Apache-2.0
// Profiler marks: while torch.profiler (or any RecordFunction observer) records, each collective
// a group posts adds a user-scope event "smddp:<call> <bytes> [<algorithm>] <plane>", e.g.
// "smddp:all_reduce(float32, 1024, sum) 4 KiB [arena_direct] host", inside torch's own
// c10d event for the call: the size, the algorithm the engine chose and where the data goes
// (host, nccl, or smddp's device plane).
// Invariant: without an observer it costs one check and builds no string.
#pragma once

#include <cstddef>

#include "smddp/request.h"

namespace smddp::torch_shim {

// device: the CUDA device of the call's tensors, -1 for host tensors.
void markForProfiler(const Request* requests, size_t count, int device);

}  // namespace smddp::torch_shim
