// SPDX-License-Identifier: Apache-2.0
// The device watchdog (planes/smddp/watchdog.h), through a DeviceStager on the fake device with no
// engine: the test plays the engine (raising flags) and holds the caller's stream with a host
// flag. A late call is reported once, naming the rank, the collective and what it waits for —
// its host part, a stuck device stream, or a caller that has not finished enqueuing (a device
// whose copies block until the test lets them go); calls that finish in time never are.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "planes/smddp/stager.h"
#include "planes/smddp/staged_layout.h"
#include "device/fake/device_fake.h"

namespace smddp::planes {
namespace {

using namespace std::chrono_literals;
using device::Device;

constexpr size_t kCount = 1000;

struct Reports {
  std::mutex mutex;
  std::vector<std::string> lines;
  void add(const std::string& s) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.push_back(s);
  }
  std::vector<std::string> get() {
    std::lock_guard<std::mutex> lock(mutex);
    return lines;
  }
};

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

// The fake device, except that an armed copyAsync blocks its caller until released.
class BlockingDevice final : public Device {
 public:
  explicit BlockingDevice(Device& inner) : d_(inner) {}
  std::atomic<bool> armed{false};
  std::atomic<bool> released{false};

  const char* name() const override { return d_.name(); }
  int count() const override { return d_.count(); }
  std::string uuid(int o) const override { return d_.uuid(o); }
  int current() const override { return d_.current(); }
  int setCurrent(int o) override { return d_.setCurrent(o); }
  device::PointerInfo query(const void* p) const override { return d_.query(p); }
  void* allocDevice(size_t b, int o) override { return d_.allocDevice(b, o); }
  void freeDevice(void* p) override { d_.freeDevice(p); }
  void* allocPinned(size_t b) override { return d_.allocPinned(b); }
  void freePinned(void* p) override { d_.freePinned(p); }
  device::Stream createStream(int o) override { return d_.createStream(o); }
  void destroyStream(device::Stream s) override { d_.destroyStream(s); }
  device::Event createEvent(int o) override { return d_.createEvent(o); }
  void destroyEvent(device::Event e) override { d_.destroyEvent(e); }
  void record(device::Event e, device::Stream s) override { d_.record(e, s); }
  void streamWait(device::Stream s, device::Event e) override { d_.streamWait(s, e); }
  bool done(device::Event e) override { return d_.done(e); }
  void copyAsync(void* dst, const void* src, size_t bytes, device::Stream s) override {
    while (armed.load() && !released.load()) std::this_thread::sleep_for(1ms);
    d_.copyAsync(dst, src, bytes, s);
  }
  void reduceAsync(DataType t, ReduceOp op, void* dst, const void* a, const void* b, size_t n,
                   device::Stream s) override {
    d_.reduceAsync(t, op, dst, a, b, n, s);
  }
  void finishAverageAsync(DataType t, void* buf, size_t n, int divisor,
                          device::Stream s) override {
    d_.finishAverageAsync(t, buf, n, divisor, s);
  }
  void waitValue(device::Stream s, const uint32_t* f, uint32_t v) override {
    d_.waitValue(s, f, v);
  }
  void loadKernels(int o) override { d_.loadKernels(o); }
  device::IpcMemHandle exportMemory(void* b) override { return d_.exportMemory(b); }
  void* openMemory(const device::IpcMemHandle& h) override { return d_.openMemory(h); }
  void closeMemory(void* p) override { d_.closeMemory(p); }
  device::IpcEventHandle exportEvent(device::Event e) override { return d_.exportEvent(e); }
  device::Event openEvent(const device::IpcEventHandle& h) override { return d_.openEvent(h); }

 private:
  Device& d_;
};

class WatchdogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dev_ = &blocking_;
    flag_ = static_cast<uint32_t*>(fake_->allocPinned(64));
    __atomic_store_n(flag_, 0u, __ATOMIC_RELEASE);
    caller_ = fake_->createStream(0);
    send_ = fake_->allocDevice(kCount * sizeof(float), 0);
    recv_ = fake_->allocDevice(kCount * sizeof(float), 0);
    stager_ = std::make_unique<DeviceStager>(
        *dev_, 0, 0, 2, 1 << 20, [] { return std::chrono::milliseconds(100); },
        [this](const std::string& s) { reports_.add(s); });
  }
  void TearDown() override {
    letCallerGo();
    blocking_.released = true;
    stager_.reset();  // drains
    fake_->freeDevice(send_);
    fake_->freeDevice(recv_);
    fake_->destroyStream(caller_);
    fake_->freePinned(flag_);
  }
  void holdCaller() { fake_->waitValue(caller_, flag_, 1); }
  void letCallerGo() { __atomic_store_n(flag_, 1u, __ATOMIC_RELEASE); }
  std::shared_ptr<StagedCall> allReduce() {
    algo::CollectiveArgs a(Call::of(CollectiveKind::kAllReduce, DataType::kFloat32, kCount), send_,
                           recv_);
    a.memory = MemoryType::kCuda;
    a.device = 0;
    a.stream = caller_;
    return stager_->stage(a, layoutStaged(a, 0, 2, 1 << 20, nullptr), "all_reduce");
  }
  // Waits (bounded) until `n` reports arrived, then a little longer to see no more come.
  std::vector<std::string> reportsAfter(size_t n) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (reports_.get().size() < n && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    std::this_thread::sleep_for(400ms);  // 16 more checks: a second report would show
    return reports_.get();
  }

  std::unique_ptr<Device> fake_ = device::makeFakeDevice(1, 0, 3);
  BlockingDevice blocking_{*fake_};
  Device* dev_ = nullptr;
  uint32_t* flag_ = nullptr;
  device::Stream caller_ = nullptr;
  void* send_ = nullptr;
  void* recv_ = nullptr;
  Reports reports_;
  std::unique_ptr<DeviceStager> stager_;
};

TEST_F(WatchdogTest, HostPartNeverDoneIsReportedOnce) {
  holdCaller();  // the input never reaches host memory
  auto call = allReduce();
  const auto lines = reportsAfter(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines[0], "rank 0/2")) << lines[0];
  EXPECT_TRUE(has(lines[0], "all_reduce on fake device memory")) << lines[0];
  EXPECT_TRUE(has(lines[0], "0 of 1 segments' host parts are done")) << lines[0];
  call->releaseAll();
}

TEST_F(WatchdogTest, StuckDeviceWorkAfterTheHostPartIsReported) {
  holdCaller();  // the staging stream waits for the caller's stream, which never goes on
  auto call = allReduce();
  call->releaseAll();  // the host part is done
  const auto lines = reportsAfter(1);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines[0], "host part is done (1 of 1 segments)")) << lines[0];
  EXPECT_TRUE(has(lines[0], "device stream is stuck")) << lines[0];
}

TEST_F(WatchdogTest, CallerStillEnqueuingIsReported) {
  blocking_.armed = true;  // the stager's first copy does not return
  std::thread caller([this] { allReduce()->releaseAll(); });
  const auto lines = reportsAfter(1);
  blocking_.released = true;
  caller.join();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(has(lines[0], "still enqueuing its device work")) << lines[0];
}

TEST_F(WatchdogTest, CallsThatFinishInTimeAreNeverReported) {
  for (int i = 0; i < 5; ++i) allReduce()->releaseAll();
  EXPECT_TRUE(reportsAfter(0).empty());
}

}  // namespace
}  // namespace smddp::planes
