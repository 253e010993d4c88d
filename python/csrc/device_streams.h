// SPDX-License-Identifier: Apache-2.0
// What the collectives need of torch's CUDA runtime: the caller's current stream, graph-capture
// detection, and Futures whose callbacks are ordered after a collective's device work. Built from
// cuda_streams.cc when torch and the CUDA toolkit have CUDA (then kShimHasCuda), else from
// cuda_streams_none.cc, whose functions refuse with a clear error. No CUDA header here.
#pragma once

#include <ATen/core/ivalue.h>

#include <vector>

#include "smddp/request.h"

namespace smddp::torch_shim {

extern const bool kShimHasCuda;

// torch's current CUDA device (what "cuda" without an index names).
int currentDevice();
// The current torch CUDA stream of `device` (a cudaStream_t).
void* currentStream(int device);
// RuntimeError naming `what` when the current stream of `device` is capturing a CUDA graph:
// smddp collectives are host-driven and cannot be captured.
void checkNotCapturing(int device, const char* what);
// A Future on `device`: its then() callbacks run on streams that waited for its value's work.
c10::intrusive_ptr<c10::ivalue::Future> makeDeviceFuture(int device);
// Tells torch's caching allocator that `requests` use `tensors` on their engine streams (as
// ProcessGroupNCCL records its own stream): memory freed meanwhile is not reused before they end.
void recordEngineStreams(const std::vector<at::Tensor>& tensors,
                         const std::vector<Request>& requests, int device);
// Completes it with `value` on a stream of torch's pool that first waited (on the device, not
// the host) for every request's result; that is the work its callbacks are ordered after.
void markCompletedOnDevice(c10::ivalue::Future& future, c10::IValue value,
                           std::vector<Request> requests, int device);

}  // namespace smddp::torch_shim
