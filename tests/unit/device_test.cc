// SPDX-License-Identifier: Apache-2.0
// Conformance of the device layer (src/device/device.h): every test runs on the fake device without
// and with random stream delays, and on CUDA when a GPU is visible (skipped otherwise), so the fake
// is checked to behave as CUDA does. Fake-only tests show that its memory cannot be touched by the
// host and that a missing stream wait gives wrong data under delays (the fake can catch one).
#include "device/device.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "device/fake/device_fake.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::device {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBound = std::chrono::seconds(30);

struct Kind {
  const char* name;
  int64_t delayUs;  // fake only; -1: CUDA
};

class DeviceTest : public ::testing::TestWithParam<Kind> {
 protected:
  void SetUp() override {
    if (GetParam().delayUs < 0) {
      std::string why;
      dev_ = cudaDevice(&why);
      if (dev_ == nullptr) GTEST_SKIP() << why;
    } else {
      owned_ = makeFakeDevice(2, GetParam().delayUs, 7);
      dev_ = owned_.get();
    }
  }
  bool fake() const { return GetParam().delayUs >= 0; }
  void sync(Stream s) {
    Event e = dev_->createEvent(0);
    dev_->record(e, s);
    ASSERT_TRUE(waitEvent(*dev_, e, Clock::now() + kBound));
    dev_->destroyEvent(e);
  }
  std::vector<float> download(const void* d, size_t n, Stream s) {
    std::vector<float> h(n);
    dev_->copyAsync(h.data(), d, n * sizeof(float), s);
    sync(s);
    return h;
  }

  std::unique_ptr<Device> owned_;
  Device* dev_ = nullptr;
};

TEST_P(DeviceTest, PointerKinds) {
  void* d = dev_->allocDevice(1000, 0);
  void* p = dev_->allocPinned(1000);
  int local = 0;
  EXPECT_EQ(dev_->query(d).kind, MemoryKind::kDevice);
  EXPECT_EQ(dev_->query(d).ordinal, 0);
  EXPECT_EQ(dev_->query(static_cast<char*>(d) + 999).kind, MemoryKind::kDevice);
  EXPECT_EQ(dev_->query(p).kind, MemoryKind::kPinned);
  EXPECT_EQ(dev_->query(&local).kind, MemoryKind::kHost);
  EXPECT_EQ(dev_->allocDevice(0, 0), nullptr);
  dev_->freeDevice(d);
  dev_->freePinned(p);
}

TEST_P(DeviceTest, CopiesRoundTripInStreamOrder) {
  const size_t n = 100003;
  std::vector<float> in(n);
  std::iota(in.begin(), in.end(), 1.0f);
  Stream s = dev_->createStream(0);
  auto* a = static_cast<float*>(dev_->allocDevice(n * sizeof(float), 0));
  auto* b = static_cast<float*>(dev_->allocDevice(n * sizeof(float), 0));
  auto* pinned = static_cast<float*>(dev_->allocPinned(n * sizeof(float)));
  for (int round = 0; round < 20; ++round) {
    in[0] = static_cast<float>(round);
    dev_->copyAsync(a, in.data(), n * sizeof(float), s);        // host -> device
    dev_->copyAsync(b + 1, a + 1, (n - 1) * sizeof(float), s);  // device -> device, offset
    dev_->copyAsync(b, a, sizeof(float), s);
    dev_->copyAsync(pinned, b, n * sizeof(float), s);  // device -> pinned
    sync(s);
    ASSERT_EQ(std::memcmp(pinned, in.data(), n * sizeof(float)), 0) << "round " << round;
  }
  dev_->freePinned(pinned);
  dev_->freeDevice(a);
  dev_->freeDevice(b);
  dev_->destroyStream(s);
}

// Stream b reads what stream a wrote, after waiting on a's event: always right, under delays too.
TEST_P(DeviceTest, EventOrdersTwoStreams) {
  const size_t n = 4099;
  Stream s1 = dev_->createStream(0);
  Stream s2 = dev_->createStream(0);
  Event e = dev_->createEvent(0);
  auto* x = static_cast<float*>(dev_->allocDevice(n * sizeof(float), 0));
  auto* y = static_cast<float*>(dev_->allocDevice(n * sizeof(float), 0));
  std::vector<float> v(n);
  for (int round = 1; round <= 30; ++round) {
    std::fill(v.begin(), v.end(), static_cast<float>(round));
    dev_->copyAsync(x, v.data(), n * sizeof(float), s1);
    dev_->record(e, s1);
    dev_->streamWait(s2, e);
    dev_->copyAsync(y, x, n * sizeof(float), s2);
    const auto out = download(y, n, s2);
    ASSERT_EQ(out[0], round);
    ASSERT_EQ(out[n - 1], round);
    sync(s1);  // v is rewritten next round
  }
  dev_->freeDevice(x);
  dev_->freeDevice(y);
  dev_->destroyEvent(e);
  dev_->destroyStream(s1);
  dev_->destroyStream(s2);
}

TEST_P(DeviceTest, NeverRecordedEventIsDoneAndWaitsForNothing) {
  Event e = dev_->createEvent(0);
  EXPECT_TRUE(dev_->done(e));
  Stream s = dev_->createStream(0);
  dev_->streamWait(s, e);
  sync(s);
  dev_->destroyEvent(e);
  dev_->destroyStream(s);
}

// A stream gated by a host flag runs nothing behind the gate until the host raises it.
TEST_P(DeviceTest, WaitValueGatesTheStream) {
  auto* flag = static_cast<uint32_t*>(dev_->allocPinned(64));
  __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
  Stream s = dev_->createStream(0);
  Event e = dev_->createEvent(0);
  auto* d = static_cast<float*>(dev_->allocDevice(sizeof(float), 0));
  const float one = 1.0f;
  dev_->waitValue(s, flag, 1);
  dev_->copyAsync(d, &one, sizeof(float), s);
  dev_->record(e, s);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(dev_->done(e)) << "the copy behind the gate ran before the flag was raised";
  __atomic_store_n(flag, 1u, __ATOMIC_RELEASE);
  ASSERT_TRUE(waitEvent(*dev_, e, Clock::now() + kBound));
  EXPECT_EQ(download(d, 1, s)[0], 1.0f);
  dev_->freeDevice(d);
  dev_->destroyEvent(e);
  dev_->destroyStream(s);
  dev_->freePinned(flag);
}

TEST_P(DeviceTest, ReduceMatchesTheCpuReducer) {
  const size_t n = 1031;
  for (DataType t :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16,
        DataType::kInt8, DataType::kUInt8, DataType::kInt32, DataType::kInt64}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
      const size_t bytes = n * dataTypeSize(t);
      std::vector<unsigned char> a(bytes), b(bytes), want(bytes), got(bytes);
      for (size_t i = 0; i < bytes; ++i) {
        a[i] = static_cast<unsigned char>((i * 37 + 11) % 61);
        b[i] = static_cast<unsigned char>((i * 53 + 5) % 59);
      }
      reduce::reduce(t, op, want.data(), a.data(), b.data(), n);
      Stream s = dev_->createStream(0);
      void* x = dev_->allocDevice(bytes, 0);
      void* y = dev_->allocDevice(bytes, 0);
      dev_->copyAsync(x, a.data(), bytes, s);
      dev_->copyAsync(y, b.data(), bytes, s);
      dev_->reduceAsync(t, op, x, x, y, n, s);
      dev_->copyAsync(got.data(), x, bytes, s);
      sync(s);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
          << toString(t) << " " << toString(op);
      dev_->freeDevice(x);
      dev_->freeDevice(y);
      dev_->destroyStream(s);
    }
  }
}

// AVG's last step: the CPU reducer's finishAverage bit for bit (fp32 division for 16-bit floats).
TEST_P(DeviceTest, FinishAverageMatchesTheCpuReducer) {
  const size_t n = 1031;
  for (DataType t :
       {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    for (int divisor : {1, 3, 7}) {
      const size_t bytes = n * dataTypeSize(t);
      std::vector<unsigned char> a(bytes), got(bytes);
      for (size_t i = 0; i < bytes; ++i) a[i] = static_cast<unsigned char>((i * 37 + 11) % 61);
      std::vector<unsigned char> want = a;
      reduce::finishAverage(t, want.data(), n, divisor);
      Stream s = dev_->createStream(0);
      void* x = dev_->allocDevice(bytes, 0);
      dev_->copyAsync(x, a.data(), bytes, s);
      dev_->finishAverageAsync(t, x, n, divisor, s);
      dev_->copyAsync(got.data(), x, bytes, s);
      sync(s);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), bytes), 0)
          << toString(t) << " / " << divisor;
      dev_->freeDevice(x);
      dev_->destroyStream(s);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, DeviceTest,
                         ::testing::Values(Kind{"fake", 0}, Kind{"fake_delays", 300},
                                           Kind{"cuda", -1}),
                         [](const auto& info) { return std::string(info.param.name); });

// The fake device's memory is not the host's: touching it from the host is a crash, at once.
TEST(FakeDevice, HostAccessToDeviceMemoryFaults) {
  auto dev = makeFakeDevice(1, 0, 1);
  auto* d = static_cast<volatile char*>(dev->allocDevice(64, 0));
  EXPECT_DEATH({ d[3] = 1; }, "");
  EXPECT_DEATH({ (void)d[0]; }, "");
  dev->freeDevice(const_cast<char*>(d));
}

// Under random delays, a reader that forgets to wait for the writer's event reads stale data: the
// fake device turns a missing stream wait into a failing test.
TEST(FakeDevice, MissingStreamWaitShowsAsWrongData) {
  auto dev = makeFakeDevice(1, 2000, 3);
  const size_t n = 1024;
  Stream writer = dev->createStream(0);
  Stream reader = dev->createStream(0);
  Event e = dev->createEvent(0);
  auto* x = static_cast<float*>(dev->allocDevice(n * sizeof(float), 0));
  int stale = 0;
  for (int round = 1; round <= 20; ++round) {
    std::vector<float> v(n, static_cast<float>(round)), out(n);
    dev->copyAsync(x, v.data(), n * sizeof(float), writer);
    // planted: no dev->streamWait(reader, <the writer's event>)
    dev->copyAsync(out.data(), x, n * sizeof(float), reader);
    dev->record(e, reader);
    ASSERT_TRUE(waitEvent(*dev, e, Clock::now() + kBound));
    dev->record(e, writer);
    ASSERT_TRUE(waitEvent(*dev, e, Clock::now() + kBound));
    if (out[0] != static_cast<float>(round)) ++stale;
  }
  EXPECT_GT(stale, 0) << "20 unordered reads all saw the new data: delays do not reorder streams";
  dev->freeDevice(x);
  dev->destroyEvent(e);
  dev->destroyStream(writer);
  dev->destroyStream(reader);
}

TEST(FakeDevice, RangesAndFreesAreChecked) {
  auto dev = makeFakeDevice(1, 0, 1);
  char* d = static_cast<char*>(dev->allocDevice(100, 0));
  std::vector<char> h(200);
  EXPECT_THROW(dev->copyAsync(h.data(), d + 50, 51, nullptr), Error);
  EXPECT_THROW(dev->freeDevice(d + 1), Error);
  EXPECT_THROW(dev->allocDevice(8, 1), Error);  // one device
  dev->freeDevice(d);
  EXPECT_THROW(dev->freeDevice(d), Error);
}

// Another process maps the same memory and event through their IPC handles.
TEST(FakeDevice, IpcMemoryAndEventsAcrossProcesses) {
  auto dev = makeFakeDevice(1, 100, 5);
  const size_t n = 777;
  auto* d = static_cast<float*>(dev->allocDevice(n * sizeof(float), 0));
  Event e = dev->createEvent(0);
  Stream s = dev->createStream(0);
  std::vector<float> v(n, 42.0f);
  const IpcMemHandle mem = dev->exportMemory(d);
  const IpcEventHandle ev = dev->exportEvent(e);
  int pipefd[2];
  ASSERT_EQ(pipe(pipefd), 0);
  const pid_t child = fork();
  if (child == 0) {
    char go;
    (void)!read(pipefd[0], &go, 1);
    auto other = makeFakeDevice(1, 100, 9);
    auto* peer = static_cast<float*>(other->openMemory(mem));
    Event pe = other->openEvent(ev);
    Stream ps = other->createStream(0);
    std::vector<float> out(n);
    other->streamWait(ps, pe);  // the parent recorded it after its write
    other->copyAsync(out.data(), peer, n * sizeof(float), ps);
    Event done = other->createEvent(0);
    other->record(done, ps);
    const bool ok =
        waitEvent(*other, done, Clock::now() + kBound) && out[0] == 42.0f && out[n - 1] == 42.0f;
    _exit(ok ? 0 : 1);
  }
  dev->copyAsync(d, v.data(), n * sizeof(float), s);
  dev->record(e, s);
  ASSERT_EQ(write(pipefd[1], "g", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  ASSERT_TRUE(waitEvent(*dev, e, Clock::now() + kBound));
  dev->freeDevice(d);
  dev->destroyEvent(e);
  dev->destroyStream(s);
  close(pipefd[0]);
  close(pipefd[1]);
}

}  // namespace
}  // namespace smddp::device
