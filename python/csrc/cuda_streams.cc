// SPDX-License-Identifier: Apache-2.0
// The shim's CUDA file (device_streams.h over torch's c10/cuda): built when torch has CUDA and the
// CUDA toolkit's headers are found, which is so in CI without a GPU (the PyPI wheel).
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGraphsC10Utils.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/Exception.h>

#include "device_streams.h"

namespace smddp::torch_shim {

const bool kShimHasCuda = true;

int currentDevice() { return c10::cuda::current_device(); }

void* currentStream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

void checkNotCapturing(int device, const char* what) {
  c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  TORCH_CHECK(c10::cuda::currentStreamCaptureStatusMayInitCtx() == c10::cuda::CaptureStatus::None,
              "smddp: ", what,
              " was called while the current CUDA stream captures a CUDA graph; "
              "smddp collectives are driven by the host and cannot be captured (run them outside "
              "the graph)");
}

c10::intrusive_ptr<c10::ivalue::Future> makeDeviceFuture(int device) {
  std::vector<c10::Device> devices{c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(device))};
  return c10::make_intrusive<c10::ivalue::Future>(c10::ListType::ofTensors(), std::move(devices));
}

void recordEngineStreams(const std::vector<at::Tensor>& tensors,
                         const std::vector<Request>& requests, int device) {
  const auto index = static_cast<c10::DeviceIndex>(device);
  for (const Request& r : requests) {
    void* engine = r.deviceStream();
    if (engine == nullptr) continue;
    const c10::cuda::CUDAStream stream =
        c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(engine), index);
    for (const at::Tensor& t : tensors) {
      if (t.defined() && t.is_cuda()) {
        c10::cuda::CUDACachingAllocator::recordStream(t.storage().data_ptr(), stream);
      }
    }
  }
}

void markCompletedOnDevice(c10::ivalue::Future& future, c10::IValue value,
                           std::vector<Request> requests, int device) {
  const auto index = static_cast<c10::DeviceIndex>(device);
  c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool(false, index);
  c10::cuda::CUDAStreamGuard guard(stream);
  for (Request& r : requests) r.waitOnStream(stream.stream());
  future.markCompleted(std::move(value));  // records its events on `stream`, the current one
}

}  // namespace smddp::torch_shim
