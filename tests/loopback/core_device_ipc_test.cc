// SPDX-License-Identifier: Apache-2.0
// Every collective on (fake) device memory within one host through CUDA IPC (planes/smddp/ipc_peers.h,
// ipc_plan.h), with random stream delays, against the staged path and a host reference:
// random floats over 2, 3, 5 and 7 ranks, counts from one element to many chunks (1 KiB scratch
// areas). Copies equal the staged path bit for bit; reductions equal the rank-order sum bit for
// bit (so every rank of an all_reduce holds the same bits; AVG: that sum divided by the world) and
// the staged path within rounding.
// Calls of different kinds chained on one stream without host waits in between.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "device/fake/device_fake.h"
#include "loopback/device_ranks.h"
#include "loopback/loopback_group.h"

namespace smddp::testing {
namespace {

constexpr size_t kStaging = 1024;

device::Device& fakeWithDelays() {
  static auto dev = device::makeFakeDevice(1, 40, 23);
  return *dev;
}

Options bounded() {
  Options o;
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Rank r's `count` random floats for case `tag`.
Floats randomOf(int r, size_t count, int tag) {
  std::mt19937 rng(static_cast<unsigned>(r * 7919 + tag * 104729 + static_cast<int>(count)));
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  Floats x(count);
  for (float& v : x) v = u(rng);
  return x;
}

// Every output of one rank, by case name.
using Outputs = std::map<std::string, Floats>;

// Runs every collective once on random inputs; returns this rank's outputs.
Outputs runAll(Communicator& c, int rank, int n, size_t count) {
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
  const Floats x = randomOf(rank, count, 1);
  const Floats blocks = randomOf(rank, count * un, 2);
  const int root = static_cast<int>(count % un);
  call("all_reduce", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.allReduce(s, r, ReduceOp::kSum); });
  call("reduce", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.reduce(s, r, ReduceOp::kSum, root); });
  call("reduce_scatter", blocks, count, [&](const Buffer& s, const Buffer& r) {
    return c.reduceScatter(s, r, ReduceOp::kSum);
  });
  call("all_reduce avg", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.allReduce(s, r, ReduceOp::kAvg); });
  call("reduce_scatter avg", blocks, count, [&](const Buffer& s, const Buffer& r) {
    return c.reduceScatter(s, r, ReduceOp::kAvg);
  });
  call("broadcast", x, count,
       [&](const Buffer& s, const Buffer& r) { return c.broadcast(s, r, root); });
  call("all_gather", x, count * un,
       [&](const Buffer& s, const Buffer& r) { return c.allGather(s, r); });
  call("gather", x, count * un,
       [&](const Buffer& s, const Buffer& r) { return c.gather(s, r, root); });
  call("scatter", blocks, count,
       [&](const Buffer& s, const Buffer& r) { return c.scatter(s, r, root); });
  call("all_to_all", blocks, count * un,
       [&](const Buffer& s, const Buffer& r) { return c.allToAll(s, r); });
  // all_reduce in place
  void* io = dev.upload(bytesOf(x));
  c.allReduce(dev.buffer(io, count, f32), dev.buffer(io, count, f32), ReduceOp::kSum)
      .waitOnStream(dev.stream());
  out["all_reduce in place"] = floatsOf(dev.download(io, count * 4));
  if (rank != root) {  // only the root's output is defined
    out.erase("reduce");
    out.erase("gather");
  }
  return out;
}

// Left to right over ranks, in float: what every rank computes through IPC.
Floats rankOrderSum(int n, const std::function<float(int, size_t)>& at, size_t count) {
  Floats sum(count);
  for (size_t i = 0; i < count; ++i) {
    float acc = at(0, i);
    for (int r = 1; r < n; ++r) acc += at(r, i);
    sum[i] = acc;
  }
  return sum;
}

TEST(DeviceIpc, EveryCollectiveEqualsTheRankOrderAndTheStagedPath) {
  for (int n : {2, 3, 5, 7}) {
    for (size_t count : {size_t{1}, size_t{77}, size_t{1500}}) {
      const std::string at = "world " + std::to_string(n) + " count " + std::to_string(count);
      std::vector<Outputs> ipc(static_cast<size_t>(n)), staged(static_cast<size_t>(n));
      for (bool useIpc : {true, false}) {
        auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging,
                                       useIpc);
        runRanks(comms, [&](int rank, Communicator& c) {
          (useIpc ? ipc : staged)[static_cast<size_t>(rank)] = runAll(c, rank, n, count);
          const std::map<std::string, uint64_t> calls = c.deviceIpcCalls();
          if (!useIpc) {
            EXPECT_TRUE(calls.empty()) << at;
            return;
          }
          for (const char* kind :
               {"broadcast", "reduce", "all_gather", "gather", "scatter", "all_to_all"}) {
            EXPECT_EQ(calls.count(kind) ? calls.at(kind) : 0u, 1u) << kind << " " << at;
          }
          EXPECT_EQ(calls.at("all_reduce"), 3u) << at;
          EXPECT_EQ(calls.at("reduce_scatter"), 2u) << at;
        });
      }
      const int root = static_cast<int>(count % static_cast<size_t>(n));
      const Floats sum = rankOrderSum(
          n, [&](int r, size_t i) { return randomOf(r, count, 1)[i]; }, count);
      for (int r = 0; r < n; ++r) {
        const Outputs& mine = ipc[static_cast<size_t>(r)];
        const Outputs& ref = staged[static_cast<size_t>(r)];
        for (const auto& [name, got] : mine) {
          ASSERT_TRUE(ref.count(name)) << name;
          const Floats& want = ref.at(name);
          ASSERT_EQ(got.size(), want.size()) << name << " rank " << r << " " << at;
          const bool reduces = name.find("reduce") != std::string::npos;
          for (size_t i = 0; i < got.size(); ++i) {
            if (reduces) {
              ASSERT_NEAR(got[i], want[i], 1e-5f) << name << " rank " << r << " [" << i << "] "
                                                  << at;
            } else {
              ASSERT_EQ(got[i], want[i]) << name << " rank " << r << " [" << i << "] " << at;
            }
          }
        }
        EXPECT_EQ(mine.at("all_reduce"), sum) << "rank " << r << " " << at;
        EXPECT_EQ(mine.at("all_reduce in place"), sum) << "rank " << r << " " << at;
        if (r == root) {
          EXPECT_EQ(mine.at("reduce"), sum) << "rank " << r << " " << at;
        }
        const Floats block = rankOrderSum(
            n,
            [&](int q, size_t i) {
              return randomOf(q, count * static_cast<size_t>(n), 2)[static_cast<size_t>(r) * count +
                                                                   i];
            },
            count);
        EXPECT_EQ(mine.at("reduce_scatter"), block) << "rank " << r << " " << at;
        Floats avg = sum, blockAvg = block;
        for (float& v : avg) v /= static_cast<float>(n);
        for (float& v : blockAvg) v /= static_cast<float>(n);
        EXPECT_EQ(mine.at("all_reduce avg"), avg) << "rank " << r << " " << at;
        EXPECT_EQ(mine.at("reduce_scatter avg"), blockAvg) << "rank " << r << " " << at;
      }
    }
  }
}

// all_gather -> reduce_scatter (each block times n) -> all_to_all -> broadcast, three rounds, all
// on one stream and waited for once: the scratch areas are reused across calls of different kinds
// while peers may still be reading them.
TEST(DeviceIpc, ChainedCallsOfEveryKindWithoutHostWaits) {
  for (int n : {2, 3, 5}) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      const auto un = static_cast<size_t>(n);
      const size_t count = 333;  // 1,332 bytes a block: two chunks of every area use
      const DataType f32 = DataType::kFloat32;
      auto start = [&](int r, size_t i) { return static_cast<float>(r * 1000 + i % 100); };
      Floats a(count);
      for (size_t i = 0; i < count; ++i) a[i] = start(rank, i);
      void* da = dev.upload(bytesOf(a));
      void* g = dev.upload(Bytes(count * un * 4, 0));
      void* t = dev.upload(Bytes(count * un * 4, 0));
      Request last = c.barrier();
      const int rounds = 3;
      for (int k = 0; k < rounds; ++k) {
        c.allGather(dev.buffer(da, count, f32), dev.buffer(g, count * un, f32))
            .waitOnStream(dev.stream());
        c.reduceScatter(dev.buffer(g, count * un, f32), dev.buffer(da, count, f32),
                        ReduceOp::kSum)
            .waitOnStream(dev.stream());
        c.allToAll(dev.buffer(g, count * un, f32), dev.buffer(t, count * un, f32))
            .waitOnStream(dev.stream());
        last = c.broadcast(dev.buffer(t, count * un, f32), dev.buffer(t, count * un, f32), k % n);
        last.waitOnStream(dev.stream());
      }
      // a_r = n^3 * start(r); the last g holds every rank's a before its last reduce_scatter
      // (n^2 * start); t is rank (rounds-1) % n's all_to_all output: block q = g's block of that
      // rank = n^2 * start(root_rank).
      const Floats gotA = floatsOf(dev.download(da, count * 4));
      const Floats gotT = floatsOf(dev.download(t, count * un * 4));
      const auto n2 = static_cast<float>(n * n);
      const int root = (rounds - 1) % n;
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(gotA[i], n2 * static_cast<float>(n) * start(rank, i)) << "rank " << rank;
        for (size_t q = 0; q < un; ++q) {
          ASSERT_EQ(gotT[q * count + i], n2 * start(root, i)) << "rank " << rank << " q " << q;
        }
      }
      EXPECT_EQ(c.impl().ipcCalls(), 4u * rounds) << "rank " << rank;
    });
  }
}

}  // namespace
}  // namespace smddp::testing
