// SPDX-License-Identifier: Apache-2.0
// Collectives on device memory (the fake device, with random stream delays) through the
// communicator: staged through pinned host memory, ordered by the caller's stream. Closed-form
// results for every collective, dtype and op over 1, 2, 3, 5 and 7 ranks, counts 0, 1, odd and
// multi-segment (a small staging segment forces the pipeline); the device path equals the host path
// bit for bit; bad device arguments fail naming rank and collective, leaving the communicator
// usable.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "device/fake/device_fake.h"
#include "loopback/device_ranks.h"
#include "loopback/loopback_group.h"
#include "reduce/reducer.h"
#include "unit/reduce_test_util.h"

namespace smddp::testing {
namespace {

using Bytes = std::vector<unsigned char>;
using reduce::testing::storeFloat;
using reduce::testing::storeInt;

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                               DataType::kInt32,    DataType::kInt64};
constexpr int kWorlds[] = {1, 2, 3, 5, 7};
constexpr size_t kStaging = 1024;  // 1 KiB segments: every count above 256 floats pipelines

// A rank whose assertion fails leaves the collective; the others then fail at this bound, not at
// the default five minutes.
Options bounded() {
  Options o;
  o.timeout = std::chrono::seconds(20);
  return o;
}

device::Device& fakeWithDelays() {
  static auto dev = device::makeFakeDevice(1, 40, 11);
  return *dev;
}

// Element i of rank r's input, a small integer, so every op is exact in every dtype.
int64_t value(ReduceOp op, int r, size_t i) {
  return op == ReduceOp::kProd ? 1 + static_cast<int64_t>((r + 2 * i) % 2)
                               : 1 + static_cast<int64_t>((3 * r + 7 * i) % 4);
}

void store(DataType t, Bytes& b, size_t i, int64_t v) {
  if (isFloatingPoint(t)) {
    storeFloat(t, b.data(), i, static_cast<double>(v));
  } else {
    storeInt(t, b.data(), i, v);
  }
}

Bytes inputOf(DataType t, ReduceOp op, int r, size_t count) {
  Bytes b(count * dataTypeSize(t));
  for (size_t i = 0; i < count; ++i) store(t, b, i, value(op, r, i));
  return b;
}

// The closed form of an all_reduce over n ranks of value().
Bytes expectedReduce(DataType t, ReduceOp op, int n, size_t count) {
  Bytes b(count * dataTypeSize(t));
  for (size_t i = 0; i < count; ++i) {
    int64_t acc = value(op, 0, i);
    for (int r = 1; r < n; ++r) {
      const int64_t v = value(op, r, i);
      acc = op == ReduceOp::kProd  ? acc * v
            : op == ReduceOp::kMin ? std::min(acc, v)
            : op == ReduceOp::kMax ? std::max(acc, v)
                                   : acc + v;
    }
    store(t, b, i, acc);
  }
  if (op == ReduceOp::kAvg) reduce::finishAverage(t, b.data(), count, n);
  return b;
}

std::string where(int n, DataType t, ReduceOp op, size_t count) {
  return "world " + std::to_string(n) + " " + toString(t) + " " + toString(op) + " x " +
         std::to_string(count);
}

TEST(DeviceCollectives, AllReduceEveryDtypeAndOpAndWorld) {
  for (int n : kWorlds) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      for (DataType t : kTypes) {
        for (ReduceOp op :
             {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kAvg}) {
          if (op == ReduceOp::kAvg && !isFloatingPoint(t)) continue;
          for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1001}}) {
            const Bytes in = inputOf(t, op, rank, count);
            void* send = dev.upload(in);
            void* recv = dev.upload(Bytes(in.size(), 0xEE));
            c.allReduce(dev.buffer(send, count, t), dev.buffer(recv, count, t), op)
                .waitOnStream(dev.stream());
            ASSERT_EQ(dev.download(recv, in.size()), expectedReduce(t, op, n, count))
                << "rank " << rank << " " << where(n, t, op, count);
            // In place, and waited for on the host instead.
            void* inout = dev.upload(in);
            c.allReduce(dev.buffer(inout, count, t), dev.buffer(inout, count, t), op).wait();
            ASSERT_EQ(dev.download(inout, in.size()), expectedReduce(t, op, n, count))
                << "in place, rank " << rank << " " << where(n, t, op, count);
          }
        }
      }
      // Within one host every call with data went through CUDA IPC: 8 dtypes x SUM, PROD, MIN,
      // MAX and the 4 floating-point ones x AVG, 3 counts, 2 forms.
      const uint64_t ipc = c.impl().ipcCalls();
      if (n > 1) {
        EXPECT_EQ(ipc, (8u * 4u + 4u) * 3u * 2u) << "rank " << rank << " world " << n;
      }
    });
  }
}

// Through CUDA IPC every rank reduces its slice in rank order, so random floats give the
// rank-order sum, the same bits on every rank; many chunks (1 KiB staging), odd counts.
TEST(DeviceCollectives, IpcAllReduceIsTheRankOrderSumOnEveryRank) {
  for (int n : {2, 3, 5, 7}) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      for (size_t count : {size_t{1}, size_t{5}, size_t{257}, size_t{4099}}) {
        std::vector<std::vector<float>> all(static_cast<size_t>(n), std::vector<float>(count));
        for (int r = 0; r < n; ++r) {
          std::mt19937 rng(static_cast<unsigned>(r * 31 + count));
          std::uniform_real_distribution<float> u(-1.0f, 1.0f);
          for (float& v : all[static_cast<size_t>(r)]) v = u(rng);
        }
        std::vector<float> want = all[0];
        for (int r = 1; r < n; ++r) {
          for (size_t i = 0; i < count; ++i) want[i] += all[static_cast<size_t>(r)][i];
        }
        Bytes in(count * 4);
        std::memcpy(in.data(), all[static_cast<size_t>(rank)].data(), in.size());
        void* d = dev.upload(in);
        void* out = dev.upload(Bytes(in.size(), 0));
        c.allReduce(dev.buffer(d, count, DataType::kFloat32),
                    dev.buffer(out, count, DataType::kFloat32), ReduceOp::kSum)
            .waitOnStream(dev.stream());
        const Bytes got = dev.download(out, in.size());
        ASSERT_EQ(std::memcmp(got.data(), want.data(), got.size()), 0)
            << "rank " << rank << " world " << n << " count " << count;
      }
      EXPECT_EQ(c.impl().ipcCalls(), 4u) << "rank " << rank;
    });
  }
}

// Random floats: the device path runs the host algorithm on the same bytes, so it equals the host
// path bit for bit (one segment: the same algorithm over the same reduction order).
TEST(DeviceCollectives, AllReduceEqualsTheHostPathBitForBit) {
  for (int n : {2, 3, 5}) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), 1 << 20, false);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      std::mt19937 rng(static_cast<unsigned>(rank * 7 + n));
      std::uniform_real_distribution<float> u(-1.0f, 1.0f);
      for (size_t count : {size_t{7}, size_t{4099}, size_t{65537}}) {
        std::vector<float> x(count);
        for (float& v : x) v = u(rng);
        Bytes in(count * 4);
        std::memcpy(in.data(), x.data(), in.size());
        std::vector<float> host(count);
        c.allReduceBlocking(Buffer(x.data(), count, DataType::kFloat32),
                            Buffer(host.data(), count, DataType::kFloat32), ReduceOp::kSum);
        void* d = dev.upload(in);
        c.allReduceBlocking(dev.buffer(d, count, DataType::kFloat32),
                            dev.buffer(d, count, DataType::kFloat32), ReduceOp::kSum);
        const Bytes got = dev.download(d, in.size());
        ASSERT_EQ(std::memcmp(got.data(), host.data(), got.size()), 0)
            << "rank " << rank << " world " << n << " count " << count;
      }
    });
  }
}

// Element i of rank r's block: a distinct integer, exact in float32 and int64.
double tagOf(int r, size_t i) { return r * 100000.0 + static_cast<double>(i); }

Bytes tagged(DataType t, int r, size_t count, size_t first = 0) {
  Bytes b(count * dataTypeSize(t));
  for (size_t i = 0; i < count; ++i) store(t, b, i, static_cast<int64_t>(tagOf(r, first + i)));
  return b;
}

Bytes concat(const std::vector<Bytes>& parts) {
  Bytes all;
  for (const Bytes& p : parts) all.insert(all.end(), p.begin(), p.end());
  return all;
}

// Within one host these go through CUDA IPC (SMDDP_DEVICE_IPC), chunked by the 1 KiB scratch.
TEST(DeviceCollectives, EveryOtherCollective) {
  for (int n : kWorlds) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      const auto sz = static_cast<size_t>(n);
      for (DataType t : {DataType::kFloat32, DataType::kInt64}) {
        for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{600}}) {
          const std::string at = "rank " + std::to_string(rank) + " world " + std::to_string(n) +
                                 " " + toString(t) + " x " + std::to_string(count);
          const Bytes mine = tagged(t, rank, count);
          std::vector<Bytes> all;
          for (int r = 0; r < n; ++r) all.push_back(tagged(t, r, count));
          const int root = n - 1;
          // broadcast from the last rank
          void* b = dev.upload(rank == root ? mine : Bytes(mine.size(), 0));
          c.broadcast(dev.buffer(b, count, t), dev.buffer(b, count, t), root)
              .waitOnStream(dev.stream());
          ASSERT_EQ(dev.download(b, mine.size()), all[root]) << "broadcast " << at;
          // all_gather, out of place and in place
          void* s = dev.upload(mine);
          void* g = dev.upload(Bytes(mine.size() * sz, 0));
          c.allGather(dev.buffer(s, count, t), dev.buffer(g, count * sz, t))
              .waitOnStream(dev.stream());
          ASSERT_EQ(dev.download(g, mine.size() * sz), concat(all)) << "all_gather " << at;
          Bytes seeded(mine.size() * sz, 0);
          std::memcpy(seeded.data() + rank * mine.size(), mine.data(), mine.size());
          void* ip = dev.upload(seeded);
          auto* own = static_cast<char*>(ip) + rank * mine.size();
          c.allGather(dev.buffer(own, count, t), dev.buffer(ip, count * sz, t))
              .waitOnStream(dev.stream());
          ASSERT_EQ(dev.download(ip, mine.size() * sz), concat(all))
              << "all_gather in place " << at;
          // all_gather into a list
          std::vector<void*> outs;
          std::vector<Buffer> list;
          for (int r = 0; r < n; ++r) {
            outs.push_back(dev.upload(Bytes(mine.size(), 0)));
            list.push_back(dev.buffer(outs.back(), count, t));
          }
          c.allGather(dev.buffer(s, count, t), list).waitOnStream(dev.stream());
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(dev.download(outs[r], mine.size()), all[r]) << "all_gather list " << at;
          }
          // gather to and scatter from rank 0
          void* gr = dev.upload(Bytes(mine.size() * sz, 0));
          c.gather(dev.buffer(s, count, t), dev.buffer(gr, count * sz, t), 0)
              .waitOnStream(dev.stream());
          if (rank == 0) {
            ASSERT_EQ(dev.download(gr, mine.size() * sz), concat(all)) << "gather " << at;
          }
          void* sc = dev.upload(rank == 0 ? concat(all) : Bytes(mine.size() * sz, 0));
          void* one = dev.upload(Bytes(mine.size(), 0));
          c.scatter(dev.buffer(sc, count * sz, t), dev.buffer(one, count, t), 0)
              .waitOnStream(dev.stream());
          ASSERT_EQ(dev.download(one, mine.size()), mine) << "scatter " << at;
          // reduce_scatter (sum of every rank's tags, block `rank`) and reduce to rank 1 % n
          std::vector<Bytes> blocks;
          for (size_t q = 0; q < sz; ++q) blocks.push_back(tagged(t, rank, count, q * count));
          void* rs = dev.upload(concat(blocks));
          void* rso = dev.upload(Bytes(mine.size(), 0));
          c.reduceScatter(dev.buffer(rs, count * sz, t), dev.buffer(rso, count, t), ReduceOp::kSum)
              .waitOnStream(dev.stream());
          Bytes want(mine.size());
          for (size_t i = 0; i < count; ++i) {
            double sum = 0;
            for (int r = 0; r < n; ++r) sum += tagOf(r, rank * count + i);
            store(t, want, i, static_cast<int64_t>(sum));
          }
          ASSERT_EQ(dev.download(rso, mine.size()), want) << "reduce_scatter " << at;
          const int rroot = 1 % n;
          void* ro = dev.upload(Bytes(mine.size(), 0));
          c.reduce(dev.buffer(s, count, t), dev.buffer(ro, count, t), ReduceOp::kMax, rroot)
              .waitOnStream(dev.stream());
          if (rank == rroot) {
            ASSERT_EQ(dev.download(ro, mine.size()), all[n - 1]) << "reduce " << at;
          }
          // all_to_all: block q of rank r's send is tagOf(r, q * count + i)
          void* a2a = dev.upload(concat(blocks));
          void* a2ao = dev.upload(Bytes(mine.size() * sz, 0));
          c.allToAll(dev.buffer(a2a, count * sz, t), dev.buffer(a2ao, count * sz, t))
              .waitOnStream(dev.stream());
          std::vector<Bytes> from;
          for (int r = 0; r < n; ++r) from.push_back(tagged(t, r, count, rank * count));
          ASSERT_EQ(dev.download(a2ao, mine.size() * sz), concat(from)) << "all_to_all " << at;
          dev.sync();  // the host vectors uploaded this round may go
        }
      }
      // Every call with data went through CUDA IPC: 2 dtypes x 3 counts (all_gather in 3 forms).
      if (n > 1) {
        const std::map<std::string, uint64_t> calls = c.deviceIpcCalls();
        for (const char* kind : {"broadcast", "gather", "scatter", "reduce_scatter", "reduce",
                                 "all_to_all"}) {
          EXPECT_EQ(calls.count(kind) ? calls.at(kind) : 0u, 6u) << kind << " rank " << rank;
        }
        EXPECT_EQ(calls.count("all_gather") ? calls.at("all_gather") : 0u, 18u) << rank;
      }
    });
  }
}

TEST(DeviceCollectives, BadDeviceArgumentsNameTheCallAndLeaveTheCommunicatorUsable) {
  auto comms = makeLoopbackGroup(3, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
  runRanks(comms, [&](int rank, Communicator& c) {
    DeviceRank dev(fakeWithDelays());
    std::vector<float> host(8, 1.0f);
    // Host memory said to be CUDA memory.
    std::string msg = expectError(
        [&] {
          c.allReduce(Buffer(host.data(), 8, DataType::kFloat32, MemoryType::kCuda, 0),
                      Buffer(host.data(), 8, DataType::kFloat32, MemoryType::kCuda, 0),
                      ReduceOp::kSum);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("rank " + std::to_string(rank)), std::string::npos) << msg;
    EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
    EXPECT_NE(msg.find("host memory"), std::string::npos) << msg;
    // A device that does not exist.
    void* d = dev.upload(Bytes(32, 0));
    msg = expectError(
        [&] {
          c.broadcast(Buffer(d, 8, DataType::kFloat32, MemoryType::kCuda, 3),
                      Buffer(d, 8, DataType::kFloat32, MemoryType::kCuda, 3), 0);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("device 3"), std::string::npos) << msg;
    // Host and device buffers in one call.
    msg = expectError(
        [&] {
          c.allReduce(dev.buffer(d, 8, DataType::kFloat32),
                      Buffer(host.data(), 8, DataType::kFloat32), ReduceOp::kSum);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("host memory"), std::string::npos) << msg;
    // Nothing moved: the communicator still works, on both kinds of memory.
    c.allReduceBlocking(Buffer(host.data(), 8, DataType::kFloat32),
                        Buffer(host.data(), 8, DataType::kFloat32), ReduceOp::kSum);
    EXPECT_EQ(host[7], 3.0f);
    void* x = dev.upload(inputOf(DataType::kFloat32, ReduceOp::kSum, rank, 8));
    c.allReduce(dev.buffer(x, 8, DataType::kFloat32), dev.buffer(x, 8, DataType::kFloat32),
                ReduceOp::kSum)
        .waitOnStream(dev.stream());
    EXPECT_EQ(dev.download(x, 32), expectedReduce(DataType::kFloat32, ReduceOp::kSum, 3, 8));
  });
}

// send/recv of device memory: a ring exchange, several messages in flight, each received buffer
// forwarded on (its content comes from the stream order), odd sizes, any source.
TEST(DeviceCollectives, SendAndRecvAroundARing) {
  for (int n : {2, 3, 5}) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      const int next = (rank + 1) % n;
      const int prev = (rank + n - 1) % n;
      for (size_t count : {size_t{1}, size_t{333}, size_t{70001}}) {
        void* mine = dev.upload(tagged(DataType::kFloat32, rank, count));
        void* got = dev.upload(Bytes(count * 4, 0));
        void* again = dev.upload(Bytes(count * 4, 0));
        Request r = c.recv(dev.buffer(got, count, DataType::kFloat32), prev, 7);
        Request s = c.send(dev.buffer(mine, count, DataType::kFloat32), next, 7);
        r.waitOnStream(dev.stream());
        // Forward what arrived, as enqueued on the stream after the receive's copy.
        Request r2 =
            c.recv(dev.buffer(again, count, DataType::kFloat32), Communicator::kAnySource, 8);
        Request s2 = c.send(dev.buffer(got, count, DataType::kFloat32), next, 8);
        s.wait();
        s2.wait();
        r2.waitOnStream(dev.stream());
        ASSERT_EQ(dev.download(got, count * 4), tagged(DataType::kFloat32, prev, count))
            << "rank " << rank << " world " << n << " count " << count;
        ASSERT_EQ(dev.download(again, count * 4),
                  tagged(DataType::kFloat32, (prev + n - 1) % n, count))
            << "forwarded, rank " << rank << " world " << n << " count " << count;
        EXPECT_EQ(r2.source(), prev);
      }
    });
  }
}

// Many calls in flight on one stream, waited for once at the end: each call's input is read after
// the previous call wrote it (the communicator's calls are ordered on the device too).
TEST(DeviceCollectives, ChainedCallsWithoutHostWaits) {
  for (int n : {2, 3}) {
    auto comms = makeLoopbackGroup(n, bounded(), nullptr, 0, &fakeWithDelays(), kStaging);
    runRanks(comms, [&](int rank, Communicator& c) {
      DeviceRank dev(fakeWithDelays());
      const size_t count = 700;
      void* x =
          dev.upload(inputOf(DataType::kFloat64, ReduceOp::kMax, 0, count));  // all ranks alike
      Request last = c.barrier();
      for (int k = 0; k < 6; ++k) {
        last = c.allReduce(dev.buffer(x, count, DataType::kFloat64),
                           dev.buffer(x, count, DataType::kFloat64), ReduceOp::kSum);
      }
      last.waitOnStream(dev.stream());
      const Bytes got = dev.download(x, count * 8);
      Bytes want = inputOf(DataType::kFloat64, ReduceOp::kMax, 0, count);
      for (size_t i = 0; i < count; ++i) {
        double v;
        std::memcpy(&v, want.data() + i * 8, 8);
        v *= std::pow(static_cast<double>(n), 6);
        std::memcpy(want.data() + i * 8, &v, 8);
      }
      ASSERT_EQ(got, want) << "rank " << rank << " world " << n;
    });
  }
}

}  // namespace
}  // namespace smddp::testing
