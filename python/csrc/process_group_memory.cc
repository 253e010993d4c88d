// SPDX-License-Identifier: Apache-2.0
// Tensors in smddp's memory (process_group.h): torch's allocateTensor, getMemAllocator and
// getMemoryStats on the engine's Communicator::allocateShared (CPU: shareable host memory),
// allocateDevice (CUDA: NCCL's ncclMemAlloc on the NCCL plane, else the device's) and
// memoryStats. A tensor's storage keeps its memory (and the pool it came from) alive past the
// group. torch's caching allocator skips such storage when streams are recorded on it; freeing
// it waits for the device, as cudaFree does.
#include "process_group.h"

#if SMDDP_TORCH_TENSOR_ALLOC

#include <ATen/ATen.h>
#include <c10/core/Allocator.h>

#include <cstring>
#include <memory>

#include "device_streams.h"

namespace smddp::torch_shim {
namespace {

// The context of a DataPtr: the shared_ptr that gives the memory back.
void releaseShared(void* context) { delete static_cast<std::shared_ptr<void>*>(context); }

// torch's allocator over a communicator's shareable memory.
class SharedAllocator final : public c10::Allocator {
 public:
  explicit SharedAllocator(std::function<std::shared_ptr<void>(size_t)> allocate)
      : allocate_(std::move(allocate)) {}
  c10::DataPtr allocate(size_t n) override {
    auto memory = std::make_unique<std::shared_ptr<void>>(allocate_(n));
    void* data = memory->get();
    return {data, memory.release(), &releaseShared, c10::Device(c10::DeviceType::CPU)};
  }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }

 private:
  std::function<std::shared_ptr<void>(size_t)> allocate_;
};

}  // namespace

bool ProcessGroupSmddp::supportsTensorAlloc(c10::DeviceIndex deviceIdx) {
  // the CPU (torch passes device.index(): -1), and CUDA devices where this build has CUDA
  return deviceIdx < 0 || kShimHasCuda;
}

std::shared_ptr<c10::Allocator> ProcessGroupSmddp::getMemAllocator() {
  // Each allocation enters the group's current communicator (the pool is the process's).
  return std::make_shared<SharedAllocator>(
      [this](size_t n) { return enter().comm().allocateShared(n); });
}

at::Tensor ProcessGroupSmddp::allocateTensor(long size, at::TensorOptions options) {
  TORCH_CHECK(size >= 0, "smddp: allocate_tensor of ", size, " elements");
  const caffe2::TypeMeta dtype = options.dtype();
  const size_t bytes = static_cast<size_t>(size) * dtype.itemsize();
  if (options.has_device() && options.device().is_cuda()) {
    TORCH_CHECK(kShimHasCuda, "smddp: allocate_tensor on ", options.device(),
                ": this build of torch_smddp has no CUDA support");
    const int index = options.device().has_index() ? options.device().index() : currentDevice();
    std::shared_ptr<void> memory = enter().comm().allocateDevice(bytes, index);
    void* data = memory.get();
    return at::from_blob(
        data, {size}, [memory](void*) mutable { memory.reset(); },
        options.device(c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(index))));
  }
  TORCH_CHECK(!options.has_device() || options.device().is_cpu(),
              "smddp: allocate_tensor places CPU and CUDA tensors (not ", options.device(), ")");
  std::shared_ptr<void> memory = enter().comm().allocateShared(bytes);
  void* data = memory.get();
  return at::from_blob(
      data, {size}, [memory](void*) mutable { memory.reset(); },
      options.device(c10::Device(c10::DeviceType::CPU)));
}

std::unordered_map<std::string, uint64_t> ProcessGroupSmddp::getMemoryStats() {
  std::unordered_map<std::string, uint64_t> stats;
  for (const auto& [name, value] : memoryStats()) stats[name] = value;
  return stats;
}

}  // namespace smddp::torch_shim

#endif  // SMDDP_TORCH_TENSOR_ALLOC
