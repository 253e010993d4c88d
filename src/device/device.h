// SPDX-License-Identifier: Apache-2.0
// The device layer: what the engine needs of an accelerator, behind one interface with two
// implementations — CUDA (src/device/cuda/, built when nvcc is found) and a fake device
// (src/device/fake/, always built) whose "device" memory the host cannot dereference and whose
// streams run on worker threads with optional random delays, so missing stream ordering shows up
// as wrong data in CI on a machine without a GPU.
// Handles (Stream, Event) are opaque pointers: a cudaStream_t / cudaEvent_t for CUDA. A null
// Stream is the device's default stream. No CUDA header here.
// Invariants: every call either does what it says or throws Error (kInvalidArgument for bad
// arguments, kUnsupported for what the device cannot do, kInternal with the device's error
// string otherwise); enqueued work runs in issue order per stream; a stream waits for an event
// only as of the event's last record() before the wait was enqueued (a never-recorded event is
// already complete), as CUDA does.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "smddp/types.h"

namespace smddp::device {

enum class MemoryKind : uint8_t {
  kHost,    // ordinary host memory the device does not know
  kPinned,  // page-locked host memory from allocPinned (host- and device-accessible)
  kDevice,  // device memory: the host must not touch it
};
const char* toString(MemoryKind kind);

struct PointerInfo {
  MemoryKind kind = MemoryKind::kHost;
  int ordinal = -1;  // the device the memory belongs to; -1 for host and pinned memory
};

using Stream = void*;
using Event = void*;

// Opaque, fixed-size handles that another process of the same host turns back into a mapping.
struct IpcMemHandle {
  unsigned char bytes[64] = {};
};
struct IpcEventHandle {
  unsigned char bytes[64] = {};
};

class Device {
 public:
  virtual ~Device() = default;
  virtual const char* name() const = 0;  // "cuda" or "fake"
  // Devices visible to this process (0: none usable).
  virtual int count() const = 0;
  // A text that names device `ordinal` across processes of every host ("GPU-" and CUDA's UUID):
  // two ranks with the same one share a device.
  virtual std::string uuid(int ordinal) const = 0;
  // The calling thread's current device (what CUDA calls without a stream or device use), and
  // a new one: returns the previous. NCCL takes its device from the current one at init.
  virtual int current() const = 0;
  virtual int setCurrent(int ordinal) = 0;

  virtual PointerInfo query(const void* p) const = 0;
  virtual void* allocDevice(size_t bytes, int ordinal) = 0;
  virtual void freeDevice(void* p) = 0;
  // Host memory the device can read and write by DMA (and, for flags, see waitValue).
  virtual void* allocPinned(size_t bytes) = 0;
  virtual void freePinned(void* p) = 0;

  virtual Stream createStream(int ordinal) = 0;
  virtual void destroyStream(Stream stream) = 0;
  virtual Event createEvent(int ordinal) = 0;
  virtual void destroyEvent(Event event) = 0;
  // The event completes once everything enqueued on `stream` before it has run.
  virtual void record(Event event, Stream stream) = 0;
  // Work enqueued on `stream` after this starts once `event` (as last recorded) completed.
  virtual void streamWait(Stream stream, Event event) = 0;
  // Non-blocking: true once the event's last record completed (or it was never recorded).
  virtual bool done(Event event) = 0;

  // Enqueues a copy of `bytes` between any two of host, pinned and device memory.
  virtual void copyAsync(void* dst, const void* src, size_t bytes, Stream stream) = 0;
  // Enqueues dst = a op b over `count` elements of device (or pinned) memory, with the numerics
  // of the CPU reducer (reduce/reducer.h); AVG reduces as SUM.
  virtual void reduceAsync(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                           size_t count, Stream stream) = 0;
  // Enqueues buf[i] /= divisor over `count` elements (the end of an AVG reduction), with the
  // numerics of the CPU reducer's finishAverage (reduce/reducer.h).
  virtual void finishAverageAsync(DataType dtype, void* buf, size_t count, int divisor,
                                  Stream stream) = 0;
  // Work enqueued on `stream` after this starts once *flag >= value. `flag` is pinned memory the
  // host writes (a release store); this is how a host-driven step gates device work without
  // blocking the host.
  virtual void waitValue(Stream stream, const uint32_t* flag, uint32_t value) = 0;
  // Loads every kernel this device enqueues (reductions, the waitValue fallback) on `ordinal`
  // now; idempotent. CUDA loads a kernel lazily at its first launch, and the load may wait until
  // every stream of the device is idle: a first launch issued while a stream waits on a flag that
  // a later host step raises never returns. Call it before enqueuing such a wait. The fake device
  // models this: until loadKernels, the first launch of each reduction waits for every stream of
  // the ordinal to go idle and fails (kInternal, naming the hazard) when they do not in time.
  virtual void loadKernels(int ordinal) = 0;

  // IPC between processes of one host. exportMemory takes a pointer returned by allocDevice.
  virtual IpcMemHandle exportMemory(void* base) = 0;
  virtual void* openMemory(const IpcMemHandle& handle) = 0;
  virtual void closeMemory(void* p) = 0;
  // Events created by createEvent can be exported; the opened event can be waited on and polled.
  virtual IpcEventHandle exportEvent(Event event) = 0;
  virtual Event openEvent(const IpcEventHandle& handle) = 0;
};

// The process's device, chosen once by SMDDP_DEVICE (auto: CUDA when this build has it and a
// device is visible; fake; cuda; none). Null when none is usable.
Device* processDevice();
// The fake device, created on first use (tests use it directly whatever SMDDP_DEVICE says).
Device& fakeDevice();
// The CUDA device when this build has it and a device is visible, else null; `why` says why not.
Device* cudaDevice(std::string* why = nullptr);

// Makes `ordinal` the calling thread's current device while it lives, then restores the one
// that was.
class CurrentDevice {
 public:
  CurrentDevice(Device& device, int ordinal) : device_(device), previous_(device.current()) {
    if (previous_ != ordinal) {
      device.setCurrent(ordinal);
      changed_ = true;
    }
  }
  ~CurrentDevice() {
    if (!changed_) return;
    try {
      device_.setCurrent(previous_);
    } catch (...) {  // the previous device was valid a moment ago: nothing to report
    }
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;

 private:
  Device& device_;
  int previous_;
  bool changed_ = false;
};

// Waits on the host until `event` completes or `deadline` passes (false then); polls with
// growing sleeps, so it costs no core while the device works.
bool waitEvent(Device& device, Event event, std::chrono::steady_clock::time_point deadline);

}  // namespace smddp::device
