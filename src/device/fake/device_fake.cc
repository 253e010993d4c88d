// SPDX-License-Identifier: Apache-2.0
// The fake device: Device over FakeMemory, FakeStream and FakeEvent. Copies and reductions run on
// the stream's worker thread through the memory's shadow mapping, with the CPU reducer. Like CUDA,
// it loads each reduction lazily: the first launch of a (dtype, op) on an ordinal waits for every
// stream of that ordinal to go idle, unless loadKernels(ordinal) ran.
#include "device/fake/device_fake.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/config.h"
#include "common/logging.h"
#include "device/fake/fake_hooks.h"
#include "device/fake/fake_memory.h"
#include "device/fake/fake_stream.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::device {
namespace {

using fake::FakeEvent;
using fake::FakeStream;

constexpr uint32_t kEventMagic = 0x66657674;  // "fevt"

struct IpcEventWire {
  uint32_t magic;
  int32_t pid;
  int32_t fd;
  int32_t ordinal;
};
static_assert(sizeof(IpcEventWire) <= sizeof(IpcEventHandle::bytes));

[[noreturn]] void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "smddp: fake device: " + what);
}

// The calling thread's current device, as CUDA keeps one per thread.
int& currentOrdinal() {
  thread_local int ordinal = 0;
  return ordinal;
}

class FakeDevice final : public Device {
 public:
  FakeDevice(int devices, int64_t delayUs, uint64_t seed, std::chrono::milliseconds lazyLoadBound)
      : devices_(devices),
        delayUs_(delayUs),
        seed_(seed),
        lazyLoadBound_(lazyLoadBound),
        allLoaded_(static_cast<size_t>(devices), false) {}

  const char* name() const override { return "fake"; }
  int count() const override { return devices_; }
  // SMDDP_FAKE_DEVICE_UUID names the process's devices (the same value in two processes: they
  // share them, as ranks sharing a GPU do); by default each process has devices of its own.
  std::string uuid(int ordinal) const override {
    checkOrdinal(ordinal);
    const std::string& given = Config::global().fakeDeviceUuid;
    const std::string base = !given.empty() ? given
                                            : "fake-" + hostName() + "-" +
                                                  std::to_string(static_cast<long>(::getpid()));
    return base + "-" + std::to_string(ordinal);
  }
  int current() const override { return currentOrdinal(); }
  int setCurrent(int ordinal) override {
    checkOrdinal(ordinal);
    const int previous = currentOrdinal();
    currentOrdinal() = ordinal;
    return previous;
  }
  PointerInfo query(const void* p) const override { return memory_.query(p); }
  void* allocDevice(size_t bytes, int ordinal) override {
    checkOrdinal(ordinal);
    return memory_.allocDevice(bytes, ordinal);
  }
  void freeDevice(void* p) override { memory_.freeDevice(p); }
  void* allocPinned(size_t bytes) override { return memory_.allocPinned(bytes); }
  void freePinned(void* p) override { memory_.freePinned(p); }

  Stream createStream(int ordinal) override {
    checkOrdinal(ordinal);
    std::lock_guard<std::mutex> lock(mutex_);
    auto* stream = new FakeStream(ordinal, delayUs_, seed_ + streamCount_++);
    live_.push_back(stream);
    return stream;
  }
  void destroyStream(Stream stream) override {
    if (stream == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      live_.erase(std::remove(live_.begin(), live_.end(), static_cast<FakeStream*>(stream)),
                  live_.end());
    }
    delete static_cast<FakeStream*>(stream);
  }
  Event createEvent(int ordinal) override {
    checkOrdinal(ordinal);
    return new FakeEvent(ordinal);
  }
  // A queued task may still name the event: it is deleted once its last record ran.
  void destroyEvent(Event event) override {
    if (event == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    graveyard_.push_back(static_cast<FakeEvent*>(event));
    sweep();
  }
  ~FakeDevice() override {
    defaultStream_.reset();
    for (FakeEvent* e : graveyard_) delete e;
  }

  void record(Event event, Stream stream) override {
    auto* e = checked(event);
    const uint64_t ticket = e->tickets().recorded.fetch_add(1) + 1;
    resolve(stream).enqueue([e, ticket] {
      auto& completed = e->tickets().completed;
      uint64_t seen = completed.load();
      while (seen < ticket && !completed.compare_exchange_weak(seen, ticket)) {
      }
    });
  }
  void streamWait(Stream stream, Event event) override {
    auto* e = checked(event);
    const uint64_t ticket = e->tickets().recorded.load();
    if (e->tickets().completed.load() >= ticket) return;
    e->waiters.fetch_add(1);
    resolve(stream).enqueue([e, ticket] {
      fake::waitUntil([e, ticket] { return e->tickets().completed.load() >= ticket; }, "an event");
      e->waiters.fetch_sub(1);
    });
  }
  bool done(Event event) override {
    auto* e = checked(event);
    return e->tickets().completed.load() >= e->tickets().recorded.load();
  }

  void copyAsync(void* dst, const void* src, size_t bytes, Stream stream) override {
    if (bytes == 0) return;
    if (dst == nullptr || src == nullptr) invalid("copyAsync with a null pointer");
    void* to = memory_.resolve(dst, bytes);
    const void* from = memory_.resolve(src, bytes);
    resolve(stream).enqueue([to, from, bytes] { std::memmove(to, from, bytes); });
  }
  void reduceAsync(DataType dtype, ReduceOp op, void* dst, const void* a, const void* b,
                   size_t count, Stream stream) override {
    if (count == 0) return;
    const size_t bytes = count * dataTypeSize(dtype);
    if (dst == nullptr || a == nullptr || b == nullptr) invalid("reduceAsync with a null pointer");
    if (!reduce::supported(dtype, op)) {
      throw Error(ErrorCode::kUnsupported, std::string("smddp: fake device: reduceAsync: ") +
                                               toString(op) + " on " + toString(dtype));
    }
    void* to = memory_.resolve(dst, bytes);
    const void* x = memory_.resolve(a, bytes);
    const void* y = memory_.resolve(b, bytes);
    const ReduceOp applied = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
    FakeStream& s = resolve(stream);
    lazyLoad(s.ordinal(), dtype, applied);
    s.enqueue([=] { reduce::reduce(dtype, applied, to, x, y, count); });
  }
  void finishAverageAsync(DataType dtype, void* buf, size_t count, int divisor,
                          Stream stream) override {
    if (count == 0) return;
    if (buf == nullptr) invalid("finishAverageAsync with a null pointer");
    if (divisor < 1) invalid("finishAverageAsync with a divisor below 1");
    if (!reduce::supported(dtype, ReduceOp::kAvg)) {
      throw Error(ErrorCode::kUnsupported,
                  std::string("smddp: fake device: finishAverageAsync on ") + toString(dtype));
    }
    void* to = memory_.resolve(buf, count * dataTypeSize(dtype));
    FakeStream& s = resolve(stream);
    lazyLoad(s.ordinal(), dtype, ReduceOp::kAvg);  // the average kernel, apart from SUM's
    s.enqueue([=] { reduce::finishAverage(dtype, to, count, divisor); });
  }
  void waitValue(Stream stream, const uint32_t* flag, uint32_t value) override {
    if (flag == nullptr) invalid("waitValue on a null flag");
    resolve(stream).enqueue([flag, value] {
      fake::waitUntil([flag, value] { return __atomic_load_n(flag, __ATOMIC_ACQUIRE) >= value; },
                      "a host flag");
    });
  }

  // For fakeDeviceHooks(): a host task on a stream, and device memory only (never host memory).
  void enqueueTask(Stream stream, std::function<void()> task) {
    resolve(stream).enqueue(std::move(task));
  }
  void* resolveDevice(const void* p, size_t bytes) const {
    if (memory_.query(p).kind != MemoryKind::kDevice) {
      invalid("not device memory of the fake device");
    }
    return memory_.resolve(p, bytes);
  }

  void loadKernels(int ordinal) override {
    checkOrdinal(ordinal);
    std::lock_guard<std::mutex> lock(mutex_);
    allLoaded_[static_cast<size_t>(ordinal)] = true;
  }

  IpcMemHandle exportMemory(void* base) override { return memory_.exportMemory(base); }
  void* openMemory(const IpcMemHandle& handle) override { return memory_.openMemory(handle); }
  void closeMemory(void* p) override { memory_.closeMemory(p); }
  IpcEventHandle exportEvent(Event event) override {
    auto* e = checked(event);
    IpcEventWire wire{kEventMagic, static_cast<int32_t>(getpid()), e->fd(), e->ordinal()};
    IpcEventHandle handle;
    std::memcpy(handle.bytes, &wire, sizeof(wire));
    return handle;
  }
  Event openEvent(const IpcEventHandle& handle) override {
    IpcEventWire wire;
    std::memcpy(&wire, handle.bytes, sizeof(wire));
    if (wire.magic != kEventMagic) invalid("not a fake-device event handle");
    return new FakeEvent(wire.pid, wire.fd);
  }

 private:
  void checkOrdinal(int ordinal) const {
    if (ordinal < 0 || ordinal >= devices_) {
      invalid("device " + std::to_string(ordinal) + " does not exist (" + std::to_string(devices_) +
              " device(s))");
    }
  }
  static FakeEvent* checked(Event event) {
    if (event == nullptr) invalid("a null event");
    return static_cast<FakeEvent*>(event);
  }
  // Under mutex_: deletes the destroyed events no queued task names any more.
  void sweep() {
    size_t kept = 0;
    for (FakeEvent* e : graveyard_) {
      if (e->tickets().completed.load() >= e->tickets().recorded.load() && e->waiters.load() == 0) {
        delete e;
      } else {
        graveyard_[kept++] = e;
      }
    }
    graveyard_.resize(kept);
  }
  // CUDA's lazy loading: a kernel's first launch may wait for the whole context to go idle.
  void lazyLoad(int ordinal, DataType dtype, ReduceOp op) {
    const int kernel = static_cast<int>(dtype) * kNumReduceOps + static_cast<int>(op);
    const auto key = std::make_pair(ordinal, kernel);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (allLoaded_[static_cast<size_t>(ordinal)] || loaded_.count(key) > 0) return;
    }
    const auto deadline = std::chrono::steady_clock::now() + lazyLoadBound_;
    while (!idle(ordinal)) {
      if (std::chrono::steady_clock::now() > deadline) {
        throw Error(ErrorCode::kInternal,
                    std::string("smddp: fake device: the first launch of the ") + toString(op) +
                        " " + toString(dtype) + " reduction on device " + std::to_string(ordinal) +
                        " waited " + std::to_string(lazyLoadBound_.count()) +
                        " ms for every stream of the device to go idle, as CUDA's lazy kernel "
                        "loading may, and a stream is still busy (waiting on a flag or an "
                        "event?): on a GPU this launch would never return; load the kernels "
                        "first (Device::loadKernels)");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    std::lock_guard<std::mutex> lock(mutex_);
    loaded_.insert(key);
  }
  bool idle(int ordinal) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (FakeStream* s : live_) {
      if (s->ordinal() == ordinal && !s->idle()) return false;
    }
    return !defaultStream_ || defaultStream_->ordinal() != ordinal || defaultStream_->idle();
  }
  FakeStream& resolve(Stream stream) {
    if (stream != nullptr) return *static_cast<FakeStream*>(stream);
    std::lock_guard<std::mutex> lock(mutex_);
    if (!defaultStream_) defaultStream_ = std::make_unique<FakeStream>(0, delayUs_, seed_ - 1);
    return *defaultStream_;
  }

  const int devices_;
  const int64_t delayUs_;
  const uint64_t seed_;
  const std::chrono::milliseconds lazyLoadBound_;
  // Before the default stream: destroyed after it, so its queued work still finds the memory.
  fake::FakeMemory memory_;
  std::mutex mutex_;  // guards what follows
  uint64_t streamCount_ = 0;
  std::vector<FakeStream*> live_;  // created and not destroyed
  std::unique_ptr<FakeStream> defaultStream_;
  std::vector<bool> allLoaded_;           // per ordinal: loadKernels ran
  std::set<std::pair<int, int>> loaded_;  // (ordinal, kernel) loaded by a first launch
  std::vector<FakeEvent*> graveyard_;     // destroyed, awaiting their last record
};

FakeDevice& processFake() { return static_cast<FakeDevice&>(fakeDevice()); }

void hookEnqueue(void* stream, void (*fn)(void*), void* arg) {
  processFake().enqueueTask(stream, [fn, arg] { fn(arg); });
}

void* hookResolve(const void* p, size_t bytes, char* error, size_t errorBytes) {
  try {
    return processFake().resolveDevice(p, bytes);
  } catch (const std::exception& e) {
    if (error != nullptr && errorBytes > 0) {
      std::snprintf(error, errorBytes, "%s", e.what());
    }
    return nullptr;
  }
}

void* hookAlloc(size_t bytes) {
  try {
    return processFake().allocDevice(bytes, 0);
  } catch (const std::exception&) {
    return nullptr;
  }
}

void hookRelease(void* p) {
  try {
    processFake().freeDevice(p);
  } catch (const std::exception&) {
  }
}

}  // namespace

const SmddpFakeDeviceHooks* fakeDeviceHooks() {
  static const SmddpFakeDeviceHooks hooks{kFakeDeviceHooksVersion, hookEnqueue, hookResolve,
                                          hookAlloc, hookRelease};
  return &hooks;
}

std::unique_ptr<Device> makeFakeDevice(int devices, int64_t delayUs, uint64_t seed,
                                       std::chrono::milliseconds lazyLoadBound) {
  if (devices < 1) invalid("at least one device, got " + std::to_string(devices));
  return std::make_unique<FakeDevice>(devices, delayUs, seed, lazyLoadBound);
}

}  // namespace smddp::device
