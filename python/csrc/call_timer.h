// SPDX-License-Identifier: Apache-2.0
// timeCalls: a diagnostic for the perf tools (bench/limits/torch_layers.py). It runs `calls`
// synchronous collectives through a ProcessGroupSmddp back to back from C++ (each: the c10d
// method, then Work::wait, as torch.distributed does) and returns the mean microseconds per call.
// Set against the same loop from Python, it separates what the shim and the engine cost from
// what the Python layers of torch.distributed cost. Every rank must call it with the same
// arguments (it issues collectives); no Python runs between the calls (the GIL is released).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "process_group.h"

namespace smddp::torch_shim {

// collective: "all_reduce" (input, in place), "broadcast" (input, from rank 0), "all_gather"
// (input into outputs, one per rank) or "barrier".
double timeCalls(ProcessGroupSmddp& pg, const std::string& collective, at::Tensor input,
                 std::vector<at::Tensor> outputs, int64_t calls);

}  // namespace smddp::torch_shim
