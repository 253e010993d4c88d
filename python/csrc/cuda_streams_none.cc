// SPDX-License-Identifier: Apache-2.0
// device_streams.h for a torch (or a machine) without CUDA: CUDA tensors are refused before this
// is reached (checkTensor), so these only guard against a missed check.
#include <c10/util/Exception.h>

#include "device_streams.h"

namespace smddp::torch_shim {

const bool kShimHasCuda = false;

namespace {
[[noreturn]] void noCuda() {
  TORCH_CHECK(false,
              "smddp: this build of torch_smddp has no CUDA support (torch without CUDA, "
              "or no CUDA toolkit when it was built)");
}
}  // namespace

int currentDevice() { noCuda(); }
void* currentStream(int) { noCuda(); }
void checkNotCapturing(int, const char*) { noCuda(); }
c10::intrusive_ptr<c10::ivalue::Future> makeDeviceFuture(int) { noCuda(); }
void recordEngineStreams(const std::vector<at::Tensor>&, const std::vector<Request>&, int) {
  noCuda();
}
void markCompletedOnDevice(c10::ivalue::Future&, c10::IValue, std::vector<Request>, int) {
  noCuda();
}

}  // namespace smddp::torch_shim
