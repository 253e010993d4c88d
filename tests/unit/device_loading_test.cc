// SPDX-License-Identifier: Apache-2.0
// Kernel loading (Device::loadKernels). CUDA loads a kernel at its first launch, and the load may
// wait for every stream of the device to go idle, so a first launch behind a stream that waits on
// a host flag never returns. Conformance (fake and CUDA, in a process of its own so that on CUDA
// these are the process's first launches): after loadKernels, every reduction launches while
// another stream is held by a flag; a launch that does not return within the bound is reported
// and the flag raised, so the test fails instead of hanging. Fake only: without loadKernels, the
// fake device reports the hazard.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "device/device.h"
#include "device/fake/device_fake.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::device {
namespace {

using Clock = std::chrono::steady_clock;
constexpr auto kBound = std::chrono::seconds(30);

const DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                           DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                           DataType::kInt32,    DataType::kInt64};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kAvg};

bool supported(DataType t, ReduceOp op) { return reduce::supported(t, op); }

// A stream held by a host flag, as the engine's staging stream is while a collective runs.
struct HeldStream {
  explicit HeldStream(Device& dev) : dev(dev) {
    flag = static_cast<uint32_t*>(dev.allocPinned(64));
    __atomic_store_n(flag, 0u, __ATOMIC_RELEASE);
    stream = dev.createStream(0);
    end = dev.createEvent(0);
    dev.waitValue(stream, flag, 1);
    dev.record(end, stream);
  }
  void release() { __atomic_store_n(flag, 1u, __ATOMIC_RELEASE); }
  ~HeldStream() {
    release();
    EXPECT_TRUE(waitEvent(dev, end, Clock::now() + kBound));
    dev.destroyEvent(end);
    dev.destroyStream(stream);
    dev.freePinned(flag);
  }
  Device& dev;
  uint32_t* flag = nullptr;
  Stream stream = nullptr;
  Event end = nullptr;
};

class LoadingTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "cuda") {
      std::string why;
      dev_ = cudaDevice(&why);
      if (dev_ == nullptr) GTEST_SKIP() << why;
    } else {
      owned_ = makeFakeDevice(1, 100, 17);
      dev_ = owned_.get();
    }
  }
  std::unique_ptr<Device> owned_;
  Device* dev_ = nullptr;
};

// Every reduction (dtype x op) launched while another stream is held: each launch returns, and
// the results are the CPU reducer's once the streams run.
TEST_P(LoadingTest, LoadedKernelsLaunchBehindAHeldStream) {
  Device& dev = *dev_;
  dev.loadKernels(0);
  dev.loadKernels(0);  // idempotent
  const size_t n = 257;
  struct Case {
    DataType t;
    ReduceOp op;
    void* x;
    void* y;
    std::vector<unsigned char> a, b, want;  // a and b: read by the copies until `copied`
  };
  std::vector<Case> cases;
  Stream work = dev.createStream(0);
  for (DataType t : kTypes) {
    for (ReduceOp op : kOps) {
      if (!supported(t, op)) continue;
      const size_t bytes = n * dataTypeSize(t);
      std::vector<unsigned char> a(bytes), b(bytes), want(bytes);
      for (size_t i = 0; i < bytes; ++i) {
        a[i] = static_cast<unsigned char>((i * 29 + 3) % 53);
        b[i] = static_cast<unsigned char>((i * 41 + 7) % 47);
      }
      reduce::reduce(t, op == ReduceOp::kAvg ? ReduceOp::kSum : op, want.data(), a.data(), b.data(),
                     n);
      void* x = dev.allocDevice(bytes, 0);
      void* y = dev.allocDevice(bytes, 0);
      cases.push_back({t, op, x, y, std::move(a), std::move(b), std::move(want)});
      dev.copyAsync(x, cases.back().a.data(), bytes, work);
      dev.copyAsync(y, cases.back().b.data(), bytes, work);
    }
  }
  Event copied = dev.createEvent(0);
  dev.record(copied, work);
  ASSERT_TRUE(waitEvent(dev, copied, Clock::now() + kBound));  // the host buffers go away
  {
    HeldStream held(dev);
    auto launches = std::async(std::launch::async, [&] {
      for (Case& c : cases) dev.reduceAsync(c.t, c.op, c.x, c.x, c.y, n, work);
    });
    if (launches.wait_for(kBound) != std::future_status::ready) {
      held.release();  // lets a lazy load finish, so the test fails instead of hanging
      launches.wait();
      FAIL() << "a reduction launched while another stream waited on a host flag did not return "
                "within 30 s: loadKernels did not load it";
    }
    launches.get();
  }
  for (Case& c : cases) {
    std::vector<unsigned char> got(c.want.size());
    dev.copyAsync(got.data(), c.x, got.size(), work);
    dev.record(copied, work);
    ASSERT_TRUE(waitEvent(dev, copied, Clock::now() + kBound));
    EXPECT_EQ(std::memcmp(got.data(), c.want.data(), got.size()), 0)
        << toString(c.t) << " " << toString(c.op);
    dev.freeDevice(c.x);
    dev.freeDevice(c.y);
  }
  dev.destroyEvent(copied);
  dev.destroyStream(work);
}

INSTANTIATE_TEST_SUITE_P(Devices, LoadingTest, ::testing::Values("fake", "cuda"),
                         [](const auto& info) { return std::string(info.param); });

// Without loadKernels the fake device behaves as CUDA may: a reduction's first launch waits for
// every stream of its device to go idle, and behind a held stream it fails, naming the hazard.
// Once a launch loaded it (the device idle), that kernel launches behind a held stream too.
TEST(FakeDeviceLoading, FirstLaunchBehindAHeldStreamFails) {
  auto dev = makeFakeDevice(1, 0, 1, std::chrono::milliseconds(200));
  const size_t n = 16;
  void* x = dev->allocDevice(n * sizeof(float), 0);
  Stream work = dev->createStream(0);
  {
    HeldStream held(*dev);
    try {
      dev->reduceAsync(DataType::kFloat32, ReduceOp::kSum, x, x, x, n, work);
      FAIL() << "the first launch behind a held stream returned";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInternal);
      EXPECT_NE(std::string(e.what()).find("lazy kernel loading"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("loadKernels"), std::string::npos) << e.what();
    }
  }
  dev->reduceAsync(DataType::kFloat32, ReduceOp::kSum, x, x, x, n, work);  // idle: loads it
  {
    HeldStream held(*dev);
    dev->reduceAsync(DataType::kFloat32, ReduceOp::kSum, x, x, x, n, work);  // loaded
    EXPECT_THROW(dev->reduceAsync(DataType::kFloat32, ReduceOp::kMax, x, x, x, n, work), Error);
  }
  Event e = dev->createEvent(0);
  dev->record(e, work);
  EXPECT_TRUE(waitEvent(*dev, e, Clock::now() + kBound));
  dev->destroyEvent(e);
  dev->destroyStream(work);
  dev->freeDevice(x);
}

}  // namespace
}  // namespace smddp::device
