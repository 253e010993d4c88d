// SPDX-License-Identifier: Apache-2.0
// The fake-device test mode (SMDDP_DEVICE=fake): the storage of every CPU tensor of a collective is
// mirrored into fake device memory (once per storage, so views of one storage keep their aliasing:
// in place stays in place), uploaded on this thread's fake stream, and the collective runs on the
// mirrors as it would on CUDA tensors — staging, events and stream waits included; at completion
// the bytes of the collective's tensors (only those) are downloaded and the mirrors freed. So the
// Python tests exercise the engine's CUDA path in CI without a GPU.
// Invariant: a mirror is freed only after every request of its collective finished on the device.
#pragma once

#include <ATen/ATen.h>

#include <utility>
#include <vector>

#include "smddp/request.h"
#include "smddp/types.h"

namespace smddp::torch_shim {

// True when the process's device layer is the fake one (read once).
bool fakeDeviceMode();

struct Mirror {
  at::Tensor tensor;       // one of the collective's tensors on this storage (keeps it alive)
  char* host = nullptr;    // the storage
  size_t bytes = 0;        // the storage's size
  void* device = nullptr;  // its mirror
  std::vector<std::pair<size_t, size_t>> ranges;  // [begin, end) of the collective's tensors
  void* stream = nullptr;  // the stream its upload was enqueued on
};

// A device buffer for `tensor` (fake mode only), registered for download on this thread.
Buffer mirrorOf(const at::Tensor& tensor, DataType dtype);
// The mirrors made on this thread since the last call.
std::vector<Mirror> takeMirrors();

// Frees, when it goes, the mirrors made on its thread since it was made, unless settle() was
// called (or it was moved from): a collective that throws before it is posted leaves none behind.
class MirrorScope {
 public:
  MirrorScope();
  MirrorScope(MirrorScope&& other) noexcept : mark_(other.mark_), armed_(other.armed_) {
    other.armed_ = false;
  }
  MirrorScope& operator=(MirrorScope&& other) noexcept {
    mark_ = other.mark_;
    armed_ = std::exchange(other.armed_, false);
    return *this;
  }
  ~MirrorScope();
  void settle() { armed_ = false; }

 private:
  size_t mark_;
  bool armed_ = true;
};

// The mirrors of one collective: download() copies them back into their tensors once every
// request finished (on the host and on the device); release() frees them (waiting, bounded, for
// the requests first, then for their uploads: a request that failed before any device work, as
// on a broken communicator, says nothing of them). Both are idempotent.
class Mirrors {
 public:
  Mirrors() = default;
  Mirrors(std::vector<Mirror> mirrors, std::vector<Request> requests)
      : mirrors_(std::move(mirrors)), requests_(std::move(requests)) {}
  Mirrors(Mirrors&&) = default;
  Mirrors& operator=(Mirrors&&) = default;
  ~Mirrors() { release(); }
  bool empty() const { return mirrors_.empty(); }
  void download();
  void release();

 private:
  std::vector<Mirror> mirrors_;
  std::vector<Request> requests_;
};

}  // namespace smddp::torch_shim
