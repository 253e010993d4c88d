// SPDX-License-Identifier: Apache-2.0
// device::Device over the CUDA runtime (shared cudart). Nothing links libcuda: the one driver call,
// cuStreamWaitValue32, is found at run time by cudaGetDriverEntryPointByVersion (cuda.h: types).
// Invariants: Stream/Event are cudaStream_t/cudaEvent_t; a null Stream is the current device's
// default stream; calls that pick a device restore the caller's. Every CUDA error handled here
// (thrown or ignored) is cleared from cudaGetLastError, so no later launch check sees it. Destroy,
// free and close never throw. waitValue's two paths both test (int32_t)(*flag - value) >= 0.
#include "device/cuda/device_cuda.h"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "device/cuda/wait_flag.h"
#include "reduce/cuda/reducer_cuda.h"
#include "smddp/error.h"

namespace smddp::device {
namespace {

static_assert(sizeof(cudaIpcMemHandle_t) <= sizeof(IpcMemHandle::bytes), "IPC handle too big");
static_assert(sizeof(cudaIpcEventHandle_t) <= sizeof(IpcEventHandle::bytes), "IPC handle too big");

// cuStreamWaitValue32 (the _v2 ABI, CUDA >= 11.7), as declared in cuda.h.
using StreamWaitValue32Fn = CUresult(CUDAAPI*)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

void check(cudaError_t err, const char* call) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear it, so the next launch check does not report it again
  throw Error(ErrorCode::kInternal, std::string("smddp: cuda device: ") + call + ": " +
                                        cudaGetErrorName(err) + ": " + cudaGetErrorString(err));
}

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "smddp: cuda device: " + what);
}

void ignore(cudaError_t err) {
  if (err != cudaSuccess) cudaGetLastError();
}

// Copies a CUDA IPC handle into / out of our fixed-size byte handles (sizes asserted above).
template <class To, class From>
To convert(const From& from) {
  To to{};
  std::memcpy(static_cast<void*>(&to), &from, std::min(sizeof(from), sizeof(to)));
  return to;
}

// Makes `ordinal` the current device for its lifetime and then restores the previous one.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    check(cudaGetDevice(&previous_), "cudaGetDevice");
    if (ordinal != previous_) {
      check(cudaSetDevice(ordinal), "cudaSetDevice");
      changed_ = true;
    }
  }
  ~DeviceGuard() {
    if (changed_) ignore(cudaSetDevice(previous_));
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = 0;
  bool changed_ = false;
};

class CudaDevice final : public Device {
 public:
  CudaDevice(int count, StreamWaitValue32Fn waitFn) : count_(count), waitFn_(waitFn) {}

  const char* name() const override { return "cuda"; }
  int count() const override { return count_; }
  std::string uuid(int ordinal) const override {
    checkOrdinal(ordinal, "uuid");
    cudaDeviceProp prop{};
    check(cudaGetDeviceProperties(&prop, ordinal), "cudaGetDeviceProperties");
    static const char* const kHex = "0123456789abcdef";
    std::string text = "GPU-";
    for (int i = 0; i < 16; ++i) {
      const auto byte = static_cast<unsigned char>(prop.uuid.bytes[i]);
      if (i == 4 || i == 6 || i == 8 || i == 10) text += '-';
      text += kHex[byte >> 4];
      text += kHex[byte & 15];
    }
    return text;
  }
  int current() const override {
    int ordinal = 0;
    check(cudaGetDevice(&ordinal), "cudaGetDevice");
    return ordinal;
  }
  int setCurrent(int ordinal) override {
    checkOrdinal(ordinal, "setCurrent");
    const int previous = current();
    if (previous != ordinal) check(cudaSetDevice(ordinal), "cudaSetDevice");
    return previous;
  }
  PointerInfo query(const void* p) const override {
    PointerInfo info;
    if (p == nullptr) return info;
    cudaPointerAttributes attr{};
    const cudaError_t err = cudaPointerGetAttributes(&attr, p);
    ignore(err);  // old drivers report plain host memory as an error: that is kHost
    if (err != cudaSuccess) return info;
    if (attr.type == cudaMemoryTypeDevice || attr.type == cudaMemoryTypeManaged) {
      info.kind = MemoryKind::kDevice;
      info.ordinal = attr.device;
    } else if (attr.type == cudaMemoryTypeHost) {
      info.kind = MemoryKind::kPinned;
    }
    return info;
  }

  void* allocDevice(size_t bytes, int ordinal) override {
    checkOrdinal(ordinal, "allocDevice");
    if (bytes == 0) return nullptr;
    DeviceGuard guard(ordinal);
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void freeDevice(void* p) override {
    if (p != nullptr) ignore(cudaFree(p));
  }
  void* allocPinned(size_t bytes) override {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes, cudaHostAllocPortable | cudaHostAllocMapped), "cudaHostAlloc");
    return p;
  }
  void freePinned(void* p) override {
    if (p != nullptr) ignore(cudaFreeHost(p));
  }
  Stream createStream(int ordinal) override {
    checkOrdinal(ordinal, "createStream");
    DeviceGuard guard(ordinal);
    cudaStream_t stream = nullptr;
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    return stream;
  }
  void destroyStream(Stream stream) override {
    if (stream != nullptr) ignore(cudaStreamDestroy(asStream(stream)));
  }
  Event createEvent(int ordinal) override {
    checkOrdinal(ordinal, "createEvent");
    DeviceGuard guard(ordinal);
    cudaEvent_t event = nullptr;  // interprocess events must disable timing
    check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventInterprocess),
          "cudaEventCreateWithFlags");
    return event;
  }
  void destroyEvent(Event event) override {
    if (event != nullptr) ignore(cudaEventDestroy(asEvent(event)));
  }
  void record(Event event, Stream stream) override {
    if (event == nullptr) invalid("record: null event");
    check(cudaEventRecord(asEvent(event), asStream(stream)), "cudaEventRecord");
  }
  void streamWait(Stream stream, Event event) override {
    if (event == nullptr) invalid("streamWait: null event");
    check(cudaStreamWaitEvent(asStream(stream), asEvent(event), 0), "cudaStreamWaitEvent");
  }
  bool done(Event event) override {
    if (event == nullptr) invalid("done: null event");
    const cudaError_t err = cudaEventQuery(asEvent(event));
    if (err != cudaErrorNotReady) check(err, "cudaEventQuery");
    ignore(err);  // in case the runtime recorded cudaErrorNotReady as its last error
    return err == cudaSuccess;
  }
  void copyAsync(void* dst, const void* src, size_t bytes, Stream stream) override {
    if (bytes == 0) return;
    if (dst == nullptr || src == nullptr) {
      invalid(std::string("copyAsync: null ") + (dst == nullptr ? "dst" : "src") +
              " with bytes > 0");
    }
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, asStream(stream)), "cudaMemcpyAsync");
  }
  void reduceAsync(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                   size_t count, Stream stream) override {
    if (count > 0 && (dst == nullptr || a == nullptr || b == nullptr)) {
      const char* which = dst == nullptr ? "dst" : a == nullptr ? "a" : "b";
      invalid(std::string("reduceAsync: null ") + which + " with count > 0");
    }
    // reduceCuda launches on the current device, so make that the stream's device. A null
    // stream is the current device's default stream; count 0 makes no CUDA call.
    if (stream == nullptr || count == 0) {
      return reduce::reduceCuda(dtype, op, dst, a, b, count, stream);
    }
    int ordinal = 0;
    check(cudaStreamGetDevice(asStream(stream), &ordinal), "cudaStreamGetDevice");
    DeviceGuard guard(ordinal);
    reduce::reduceCuda(dtype, op, dst, a, b, count, stream);
  }
  void finishAverageAsync(DataType dtype, void* buf, size_t count, int divisor,
                          Stream stream) override {
    if (count > 0 && buf == nullptr) invalid("finishAverageAsync: null buf with count > 0");
    if (stream == nullptr || count == 0) {
      return reduce::finishAverageCuda(dtype, buf, count, divisor, stream);
    }
    int ordinal = 0;
    check(cudaStreamGetDevice(asStream(stream), &ordinal), "cudaStreamGetDevice");
    DeviceGuard guard(ordinal);
    reduce::finishAverageCuda(dtype, buf, count, divisor, stream);
  }
  void waitValue(Stream stream, const uint32_t* flag, uint32_t value) override {
    if (flag == nullptr || reinterpret_cast<uintptr_t>(flag) % alignof(uint32_t) != 0) {
      invalid("waitValue: flag is null or not 4-byte aligned");
    }
    void* devicePtr = nullptr;
    const cudaError_t err = cudaHostGetDevicePointer(&devicePtr, const_cast<uint32_t*>(flag), 0);
    ignore(err);
    if (err != cudaSuccess) invalid("waitValue: flag is not pinned memory from allocPinned");
    if (waitFn_ != nullptr && memOps_.load(std::memory_order_relaxed)) {
      const CUresult res = waitFn_(reinterpret_cast<CUstream>(asStream(stream)),
                                   static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(devicePtr)),
                                   value, CU_STREAM_WAIT_VALUE_GEQ);
      if (res == CUDA_SUCCESS) return;
      if (res != CUDA_ERROR_NOT_SUPPORTED) {
        throw Error(ErrorCode::kInternal, "smddp: cuda device: cuStreamWaitValue32: CUresult " +
                                              std::to_string(static_cast<int>(res)));
      }
      memOps_.store(false, std::memory_order_relaxed);  // stream memory ops unsupported
    }
    // No stream memory operations: a one-thread kernel polls the flag (wait_flag.h).
    check(launchWaitFlag(static_cast<const uint32_t*>(devicePtr), value, asStream(stream)),
          "launchWaitFlag");
  }
  void loadKernels(int ordinal) override {
    checkOrdinal(ordinal, "loadKernels");
    if (ordinal < kMaxOrdinals && loaded_[ordinal].load(std::memory_order_acquire)) return;
    DeviceGuard guard(ordinal);
    reduce::loadKernelsCuda();
    check(loadWaitFlag(), "cudaFuncGetAttributes(waitFlagKernel)");
    if (ordinal < kMaxOrdinals) loaded_[ordinal].store(true, std::memory_order_release);
  }
  IpcMemHandle exportMemory(void* base) override {
    if (base == nullptr) invalid("exportMemory: null pointer");
    cudaIpcMemHandle_t handle{};
    check(cudaIpcGetMemHandle(&handle, base), "cudaIpcGetMemHandle");
    return convert<IpcMemHandle>(handle);
  }
  void* openMemory(const IpcMemHandle& handle) override {
    void* p = nullptr;
    check(cudaIpcOpenMemHandle(&p, convert<cudaIpcMemHandle_t>(handle),
                               cudaIpcMemLazyEnablePeerAccess),
          "cudaIpcOpenMemHandle");
    return p;
  }
  void closeMemory(void* p) override {
    if (p != nullptr) ignore(cudaIpcCloseMemHandle(p));
  }
  IpcEventHandle exportEvent(Event event) override {
    if (event == nullptr) invalid("exportEvent: null event");
    cudaIpcEventHandle_t handle{};
    check(cudaIpcGetEventHandle(&handle, asEvent(event)), "cudaIpcGetEventHandle");
    return convert<IpcEventHandle>(handle);
  }
  Event openEvent(const IpcEventHandle& handle) override {
    cudaEvent_t event = nullptr;
    check(cudaIpcOpenEventHandle(&event, convert<cudaIpcEventHandle_t>(handle)),
          "cudaIpcOpenEventHandle");
    return event;
  }

 private:
  static cudaStream_t asStream(Stream s) { return static_cast<cudaStream_t>(s); }
  static cudaEvent_t asEvent(Event e) { return static_cast<cudaEvent_t>(e); }
  void checkOrdinal(int ordinal, const char* fn) const {
    if (ordinal < 0 || ordinal >= count_) {
      invalid(std::string(fn) + ": device ordinal " + std::to_string(ordinal) +
              " out of range [0, " + std::to_string(count_) + ")");
    }
  }
  const int count_;
  const StreamWaitValue32Fn waitFn_;  // null: waitValue always uses the host-function fallback
  std::atomic<bool> memOps_{true};    // false once the driver said stream memory ops unsupported
  static constexpr int kMaxOrdinals = 64;  // beyond: loadKernels asks the runtime every time
  std::atomic<bool> loaded_[kMaxOrdinals] = {};
};

}  // namespace

std::unique_ptr<Device> makeCudaDevice(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count <= 0) {
    ignore(err);
    if (why != nullptr) {
      *why = std::string("no CUDA device: cudaGetDeviceCount: ") +
             (err != cudaSuccess ? cudaGetErrorString(err) : "found none");
    }
    return nullptr;
  }
  // 12000 asks for the ABI of CUDA 12 (cuStreamWaitValue32_v2, the signature in cuda.h).
  // cudaEnableDefault picks the same default-stream flavour (legacy or per-thread) as this file.
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  const cudaError_t lookup = cudaGetDriverEntryPointByVersion("cuStreamWaitValue32", &fn, 12000,
                                                              cudaEnableDefault, &found);
  ignore(lookup);
  if (lookup != cudaSuccess || found != cudaDriverEntryPointSuccess) fn = nullptr;
  return std::make_unique<CudaDevice>(count, reinterpret_cast<StreamWaitValue32Fn>(fn));
}

}  // namespace smddp::device
