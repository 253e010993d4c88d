// SPDX-License-Identifier: Apache-2.0
// The process's device layer (SMDDP_DEVICE) as code above the engine sees it: enough to move bytes
// in and out of device memory on a stream, for the torch backend's fake-device test mode and for
// programs that test with it. Collectives take device memory directly (Buffer with
// MemoryType::kCuda); nothing here is needed for that. No CUDA types: streams are void*.
// Invariant: every wait is bounded; failures throw smddp::Error.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace smddp::device_api {

// "cuda", "fake", or "" when no device is usable (then every call below throws kUnsupported).
std::string name();
// True when SMDDP_DEVICE=fake. Reads the configuration only: no device is probed (CUDA is not
// initialized), so it may be asked on every call.
bool fake();
// Devices visible to this process (0 when none is usable).
int count();
void* alloc(size_t bytes, int ordinal);
void free(void* p);
void* createStream(int ordinal);
void destroyStream(void* stream);
// Enqueues a copy between host and device memory (either direction) on `stream`. With ordinary
// (pageable) host memory CUDA may block the caller until the stream reaches the copy: synchronize
// first where that wait must be bounded.
void copyAsync(void* dst, const void* src, size_t bytes, void* stream);
// Returns once everything enqueued on `stream` so far has run; Error(kTimeout) after `bound`.
void synchronize(void* stream, std::chrono::milliseconds bound);

}  // namespace smddp::device_api
