// SPDX-License-Identifier: Apache-2.0
// CUDA collectives across hosts on the (fake) device (planes/smddp/path.h: kIpcHosts): IPC within
// each host, only each rank's share staged and exchanged with its counterparts. Thread-ranks that
// report different hosts, each host with its heap arena (makeLoopbackHosts), random stream delays.
// all_reduce (one-shot and chunked, SUM and AVG, in place), reduce_scatter (SUM, AVG) and
// all_gather over 2 x 2, 2 x 3 (interleaved ranks) and 3 x 2 equal the staged path within
// rounding, and equal the closed form bit for bit on small integers; every rank of an all_reduce
// holds the same bits; the calls are counted on the IPC path. Hosts of different sizes and the
// collectives without a form across hosts stay staged and right. Calls chained on one stream
// without host waits.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "device/fake/device_fake.h"
#include "loopback/device_ranks.h"
#include "loopback/loopback_group.h"

namespace smddp::testing {
namespace {

constexpr size_t kStaging = 1024;  // 256 floats an area: counts above take many chunks

device::Device& fakeWithDelays() {
  static auto dev = device::makeFakeDevice(1, 40, 29);
  return *dev;
}

Options bounded() {
  Options o;
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Rank r's input for case `tag`: random in [-1, 1), or small integers (exact sums).
Floats inputOf(int r, size_t count, int tag, bool exact) {
  std::mt19937 rng(static_cast<unsigned>(r * 7919 + tag * 104729 + static_cast<int>(count)));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Floats x(count);
  for (size_t i = 0; i < count; ++i) {
    x[i] = exact ? static_cast<float>((r + 1) * 3 + static_cast<int>(i % 13)) : u(rng);
  }
  return x;
}

using Outputs = std::map<std::string, Floats>;

Outputs runAll(Communicator& c, int rank, int n, size_t count, bool exact) {
  DeviceRank dev(fakeWithDelays());
  const auto un = static_cast<size_t>(n);
  const DataType f32 = DataType::kFloat32;
  Outputs out;
  auto call = [&](const std::string& name, const Floats& in, size_t outCount, auto fn) {
    void* s = dev.upload(bytesOf(in));
    void* r = dev.upload(Bytes(outCount * 4, 0));
    fn(dev.buffer(s, in.size(), f32), dev.buffer(r, outCount, f32)).waitOnStream(dev.stream());
    out[name] = floatsOf(dev.download(r, outCount * 4));
  };
  const Floats x = inputOf(rank, count, 1, exact);
  const Floats blocks = inputOf(rank, count * un, 2, exact);
  call("all_reduce", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.allReduce(s, r, ReduceOp::kSum); });
  call("all_reduce avg", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.allReduce(s, r, ReduceOp::kAvg); });
  call("reduce_scatter", blocks, count, [&](const Buffer& s, const Buffer& r) {
    return c.reduceScatter(s, r, ReduceOp::kSum);
  });
  call("reduce_scatter avg", blocks, count, [&](const Buffer& s, const Buffer& r) {
    return c.reduceScatter(s, r, ReduceOp::kAvg);
  });
  call("all_gather", x, count * un,
       [&](const Buffer& s, const Buffer& r) { return c.allGather(s, r); });
  call("broadcast", x, count,  // no form across hosts: staged, between the others
       [&](const Buffer& s, const Buffer& r) { return c.broadcast(s, r, n - 1); });
  void* io = dev.upload(bytesOf(x));
  c.allReduce(dev.buffer(io, count, f32), dev.buffer(io, count, f32), ReduceOp::kSum)
      .waitOnStream(dev.stream());
  out["all_reduce in place"] = floatsOf(dev.download(io, count * 4));
  return out;
}

// The closed form: sums of small integers are exact in any order.
Floats expected(const std::string& name, int rank, int n, size_t count) {
  const auto un = static_cast<size_t>(n);
  Floats want;
  if (name == "all_gather") {
    for (int q = 0; q < n; ++q) {
      const Floats b = inputOf(q, count, 1, true);
      want.insert(want.end(), b.begin(), b.end());
    }
    return want;
  }
  if (name == "broadcast") return inputOf(n - 1, count, 1, true);
  const bool scatter = name.rfind("reduce_scatter", 0) == 0;
  want.assign(count, 0.0f);
  for (int q = 0; q < n; ++q) {
    const Floats in = scatter ? inputOf(q, count * un, 2, true) : inputOf(q, count, 1, true);
    for (size_t i = 0; i < count; ++i) {
      want[i] += in[(scatter ? static_cast<size_t>(rank) * count : 0) + i];
    }
  }
  if (name.find("avg") != std::string::npos) {
    for (float& v : want) v /= static_cast<float>(n);
  }
  return want;
}

std::string describe(const std::vector<int>& hostOf) {
  std::string s = "hosts of ranks ";
  for (int h : hostOf) s += std::to_string(h);
  return s;
}

void checkLayout(const std::vector<int>& hostOf, bool even) {
  const int n = static_cast<int>(hostOf.size());
  for (size_t count : {size_t{1}, size_t{77}, size_t{1500}}) {
    const std::string at = describe(hostOf) + " count " + std::to_string(count);
    for (bool exact : {true, false}) {
      std::vector<Outputs> ipc(static_cast<size_t>(n)), staged(static_cast<size_t>(n));
      for (bool useIpc : {true, false}) {
        auto comms = makeLoopbackHosts(hostOf, bounded(), &fakeWithDelays(), kStaging, useIpc);
        runRanks(comms, [&](int rank, Communicator& c) {
          (useIpc ? ipc : staged)[static_cast<size_t>(rank)] = runAll(c, rank, n, count, exact);
          const std::map<std::string, uint64_t> calls = c.deviceIpcCalls();
          if (!useIpc || !even) {
            EXPECT_TRUE(calls.empty()) << at;
            return;
          }
          EXPECT_EQ(calls.count("broadcast"), 0u) << at;
          EXPECT_EQ(calls.count("all_reduce") ? calls.at("all_reduce") : 0u, 3u) << at;
          EXPECT_EQ(calls.count("reduce_scatter") ? calls.at("reduce_scatter") : 0u, 2u) << at;
          EXPECT_EQ(calls.count("all_gather") ? calls.at("all_gather") : 0u, 1u) << at;
        });
      }
      for (int r = 0; r < n; ++r) {
        for (const auto& [name, got] : ipc[static_cast<size_t>(r)]) {
          const Floats& want = staged[static_cast<size_t>(r)].at(name);
          ASSERT_EQ(got.size(), want.size()) << name << " rank " << r << " " << at;
          if (exact) {
            ASSERT_EQ(got, expected(name, r, n, count)) << name << " rank " << r << " " << at;
            ASSERT_EQ(want, expected(name, r, n, count)) << "staged " << name << " " << at;
            continue;
          }
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-5f) << name << " rank " << r << " [" << i << "] " << at;
          }
        }
        for (const char* same : {"all_reduce", "all_reduce avg", "all_reduce in place"}) {
          EXPECT_EQ(ipc[static_cast<size_t>(r)].at(same), ipc[0].at(same))
              << same << ": rank " << r << " differs from rank 0, " << at;
        }
      }
    }
  }
}

TEST(DeviceIpcHosts, EqualsTheStagedPathAndTheClosedForm) {
  checkLayout({0, 0, 1, 1}, true);
  checkLayout({0, 1, 0, 1, 0, 1}, true);  // 2 hosts x 3, interleaved rank numbers
  checkLayout({0, 0, 1, 1, 2, 2}, true);
}

TEST(DeviceIpcHosts, HostsOfDifferentSizesStayStaged) {
  checkLayout({0, 0, 0, 1, 1}, false);
}

// all_gather -> reduce_scatter -> all_reduce, three rounds on one stream, waited for once.
TEST(DeviceIpcHosts, ChainedCallsWithoutHostWaits) {
  const std::vector<int> hostOf = {0, 1, 0, 1};
  const int n = 4;
  auto comms = makeLoopbackHosts(hostOf, bounded(), &fakeWithDelays(), kStaging);
  runRanks(comms, [&](int rank, Communicator& c) {
    DeviceRank dev(fakeWithDelays());
    const size_t count = 333;
    const DataType f32 = DataType::kFloat32;
    Floats a(count);
    for (size_t i = 0; i < count; ++i) a[i] = static_cast<float>(rank + 1 + i % 7);
    void* da = dev.upload(bytesOf(a));
    void* g = dev.upload(Bytes(count * n * 4, 0));
    const int rounds = 3;
    for (int k = 0; k < rounds; ++k) {
      c.allGather(dev.buffer(da, count, f32), dev.buffer(g, count * n, f32))
          .waitOnStream(dev.stream());
      c.reduceScatter(dev.buffer(g, count * n, f32), dev.buffer(da, count, f32), ReduceOp::kSum)
          .waitOnStream(dev.stream());
      c.allReduce(dev.buffer(da, count, f32), dev.buffer(da, count, f32), ReduceOp::kAvg)
          .waitOnStream(dev.stream());
    }
    // Each round: a_r -> n * a_r (block r of every rank's gather is a_r) -> the average over the
    // ranks, the sum of the a. After the first round every rank holds that sum; then x n a round.
    const Floats got = floatsOf(dev.download(da, count * 4));
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += static_cast<float>(q + 1 + i % 7);
      const float want = sum * static_cast<float>(n * n);
      ASSERT_EQ(got[i], want) << "rank " << rank << " [" << i << "]";
    }
    EXPECT_EQ(c.impl().ipcCalls(), 3u * rounds) << "rank " << rank;
    const auto memory = c.memoryStats();  // the exchanges' pinned memory, the IPC scratch
    EXPECT_GT(memory.at("staging_pinned"), 0u) << "rank " << rank;
    EXPECT_EQ(memory.at("device_ipc_scratch"), 2u * kStaging + 2u * kStaging) << "rank " << rank;
  });
}

}  // namespace
}  // namespace smddp::testing
