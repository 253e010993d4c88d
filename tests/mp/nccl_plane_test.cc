// SPDX-License-Identifier: Apache-2.0
// The NCCL plane in separate processes, without a GPU: the fake device (random stream delays) and
// smddp's test NCCL (tests/nccl, through SMDDP_NCCL_LIBRARY, which ctest sets), which moves the
// data between the processes as NCCL would. Through the public API only:
//   - every collective on device memory, worlds 1, 3, 5 and 7, odd and zero counts, several
//     dtypes and ops, against closed forms; send/recv in a ring; the plane is "nccl";
//   - (dtype, op) pairs NCCL lacks (bitwise ops) run on smddp's own plane, same results;
//   - the plane choice: ranks sharing a device, a too-old NCCL, SMDDP_GPU_PLANE;
//   - smddp's guarantees on it: a peer that exits or stops is named on every survivor within
//     2 s; a mismatch (count) is named; a silent peer is a timeout naming the collective; abort.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fork_ranks.h"
#include "smddp/device.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A device buffer of `count` T, filled from host values; read back with get().
template <typename T>
struct DeviceArray {
  void* stream;
  size_t count;
  void* ptr;
  DeviceArray(void* s, const std::vector<T>& host) : stream(s), count(host.size()) {
    ptr = device_api::alloc(std::max<size_t>(count * sizeof(T), 8), 0);
    device_api::copyAsync(ptr, host.data(), count * sizeof(T), stream);
    device_api::synchronize(stream, 60s);  // `host` may be a temporary
  }
  DeviceArray(void* s, size_t n) : DeviceArray(s, std::vector<T>(n, T(0))) {}
  ~DeviceArray() { device_api::free(ptr); }
  Buffer buf(DataType t) const { return Buffer(ptr, count, t, MemoryType::kCuda, 0, stream); }
  std::vector<T> get() const {
    device_api::synchronize(stream, 60s);
    std::vector<T> out(count);
    device_api::copyAsync(out.data(), ptr, count * sizeof(T), stream);
    device_api::synchronize(stream, 60s);
    return out;
  }
};

template <typename T>
int expectEqual(int rank, const char* what, const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() != want.size()) {
    std::fprintf(stderr, "rank %d: %s: %zu elements, expected %zu\n", rank, what, got.size(),
                 want.size());
    return 1;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "rank %d: %s: count %zu index %zu: got %g expected %g\n", rank, what,
                   want.size(), i, static_cast<double>(got[i]), static_cast<double>(want[i]));
      return 1;
    }
  }
  return 0;
}

std::shared_ptr<Communicator> join(const std::string& dir, int rank, int n,
                                   std::chrono::milliseconds timeout = 60s) {
  Options opts;
  opts.provider = "shm";
  opts.timeout = timeout;
  return Communicator::create(makeFileStore(dir), rank, n, opts);
}

int collectives(Communicator& c, int rank, int n) {
  if (c.dataPlane() != "nccl") {
    std::fprintf(stderr, "rank %d: plane %s (%s)\n", rank, c.dataPlane().c_str(),
                 c.dataPlaneReason().c_str());
    return 1;
  }
  void* s = device_api::createStream(0);
  const auto F = DataType::kFloat32;
  const auto I = DataType::kInt32;
  const int sum = n * (n + 1) / 2;
  for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{100003}}) {
    std::vector<float> x(count), want(count), wantMax(count), wantAvg(count);
    for (size_t i = 0; i < count; ++i) {
      const int v = static_cast<int>(i % 89);
      x[i] = static_cast<float>(rank + 1 + v);
      want[i] = static_cast<float>(sum + n * v);
      wantMax[i] = static_cast<float>(n + v);
      wantAvg[i] = static_cast<float>(sum + n * v) / static_cast<float>(n);
    }
    DeviceArray<float> in(s, x), out(s, count), inPlace(s, x), avg(s, count);
    c.allReduce(in.buf(F), out.buf(F), ReduceOp::kSum).waitOnStream(s);
    c.allReduce(inPlace.buf(F), inPlace.buf(F), ReduceOp::kMax).waitOnStream(s);
    c.allReduce(in.buf(F), avg.buf(F), ReduceOp::kAvg).wait();  // the host waits this time
    if (expectEqual(rank, "all_reduce sum", out.get(), want) ||
        expectEqual(rank, "all_reduce max in place", inPlace.get(), wantMax)) {
      return 1;
    }
    const auto gotAvg = avg.get();
    for (size_t i = 0; i < count; ++i) {
      if (std::abs(gotAvg[i] - wantAvg[i]) > 1e-5f * wantAvg[i]) {
        std::fprintf(stderr, "rank %d: all_reduce avg index %zu: %g vs %g\n", rank, i, gotAvg[i],
                     wantAvg[i]);
        return 1;
      }
    }
    // int32 reduce (PROD to the last rank), broadcast from the middle
    std::vector<int32_t> xi(count, rank + 1), prod(count, 1), root(count);
    for (int r = 1; r <= n; ++r) {
      for (auto& v : prod) v *= r;
    }
    for (size_t i = 0; i < count; ++i) root[i] = static_cast<int32_t>(1000 * (n / 2) + i % 1000);
    DeviceArray<int32_t> ri(s, xi), ro(s, count), b(s, rank == n / 2 ? root : xi);
    c.reduce(ri.buf(I), ro.buf(I), ReduceOp::kProd, n - 1).waitOnStream(s);
    c.broadcast(b.buf(I), b.buf(I), n / 2).waitOnStream(s);
    if ((rank == n - 1 && expectEqual(rank, "reduce prod", ro.get(), prod)) ||
        expectEqual(rank, "broadcast", b.get(), root)) {
      return 1;
    }
  }
  const auto un = static_cast<size_t>(n);
  for (size_t per : {size_t{0}, size_t{5}, size_t{4099}}) {
    std::vector<float> mine(per), all(per * un), blocks(per * un), rs(per), a2a(per * un);
    for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<float>(i);
    std::memcpy(mine.data(), all.data() + rank * per, per * sizeof(float));
    for (size_t i = 0; i < blocks.size(); ++i) {
      blocks[i] = static_cast<float>(rank + 1 + static_cast<int>(i % 97));
    }
    for (size_t i = 0; i < per; ++i) {
      rs[i] = static_cast<float>(sum + n * static_cast<int>((rank * per + i) % 97));
    }
    auto tag = [](size_t from, size_t to, size_t i) {
      return static_cast<float>(from * 100 + to + (i % 50) * 1000);
    };
    std::vector<float> a2aIn(per * un);
    for (size_t q = 0; q < un; ++q) {
      for (size_t i = 0; i < per; ++i) {
        a2aIn[q * per + i] = tag(static_cast<size_t>(rank), q, i);
        a2a[q * per + i] = tag(q, static_cast<size_t>(rank), i);
      }
    }
    DeviceArray<float> gin(s, mine), gout(s, all.size()), rin(s, blocks), rout(s, per),
        ain(s, a2aIn), aout(s, a2a.size());
    c.allGather(gin.buf(F), gout.buf(F)).waitOnStream(s);
    c.reduceScatter(rin.buf(F), rout.buf(F), ReduceOp::kSum).waitOnStream(s);
    c.allToAll(ain.buf(F), aout.buf(F)).waitOnStream(s);
    if (expectEqual(rank, "all_gather", gout.get(), all) ||
        expectEqual(rank, "reduce_scatter", rout.get(), rs) ||
        expectEqual(rank, "all_to_all", aout.get(), a2a)) {
      return 1;
    }
  }
  // send/recv in a ring, tag 0 (NCCL's pair communicators)
  if (n > 1) {
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::vector<int32_t> mine(333, rank * 10 + 1), want(333, prev * 10 + 1);
    DeviceArray<int32_t> snd(s, mine), rcv(s, 333);
    Request a = c.send(snd.buf(I), next);
    Request b = c.recv(rcv.buf(I), prev);
    a.waitOnStream(s);
    b.waitOnStream(s);
    if (expectEqual(rank, "ring send/recv", rcv.get(), want)) return 1;
    if (b.source() != prev) {
      std::fprintf(stderr, "rank %d: recv source %d, expected %d\n", rank, b.source(), prev);
      return 1;
    }
  }
  // bitwise OR: no NCCL op; smddp's own plane gives the same closed form
  std::vector<int32_t> bits(9, 1 << rank), ored(9, (1 << n) - 1);
  DeviceArray<int32_t> bi(s, bits);
  c.allReduce(bi.buf(I), bi.buf(I), ReduceOp::kBor).waitOnStream(s);
  if (expectEqual(rank, "all_reduce bor (smddp's plane)", bi.get(), ored)) return 1;
  device_api::destroyStream(s);
  return 0;
}

std::string runRanks(int n, const std::function<int(Communicator&, int)>& body,
                     const std::function<void(int)>& before = nullptr,
                     std::chrono::milliseconds timeout = 60s) {
  const std::string dir = test::makeTempDir("smddp-mp-nccl");
  const std::string report = test::forkRanks(n, 120s, [&](int rank) {
    if (before) before(rank);
    auto comm = join(dir, rank, n, timeout);
    return body(*comm, rank);
  });
  test::removeTree(dir);
  return report;
}

class NcclPlaneWorlds : public ::testing::TestWithParam<int> {};

TEST_P(NcclPlaneWorlds, EveryCollectiveMatchesTheClosedForm) {
  const int n = GetParam();
  EXPECT_EQ(runRanks(n, [n](Communicator& c, int rank) { return collectives(c, rank, n); }), "");
}

INSTANTIATE_TEST_SUITE_P(Worlds, NcclPlaneWorlds, ::testing::Values(1, 3, 5, 7));

// allocateDevice: memory from ncclMemAlloc (the full test NCCL) or the device's own (the oldest
// NCCL taken has no ncclMemAlloc) carries an all_reduce in place; a device that does not exist
// is refused.
int allocated(Communicator& c, int rank, int n) {
  const size_t count = 4099;
  std::shared_ptr<void> mem = c.allocateDevice(count * 4, 0);
  void* s = device_api::createStream(0);
  const std::vector<int32_t> mine(count, rank + 1);
  device_api::copyAsync(mem.get(), mine.data(), count * 4, s);
  c.allReduce(Buffer(mem.get(), count, DataType::kInt32, MemoryType::kCuda, 0, s),
              Buffer(mem.get(), count, DataType::kInt32, MemoryType::kCuda, 0, s), ReduceOp::kSum)
      .waitOnStream(s);
  std::vector<int32_t> got(count);
  device_api::copyAsync(got.data(), mem.get(), count * 4, s);
  device_api::synchronize(s, 60s);
  device_api::destroyStream(s);
  if (expectEqual(rank, "all_reduce on allocateDevice's memory", got,
                  std::vector<int32_t>(count, n * (n + 1) / 2))) {
    return 1;
  }
  try {
    c.allocateDevice(8, 5);
  } catch (const Error& e) {
    return e.code() == ErrorCode::kInvalidArgument ? 0 : 1;
  }
  return 1;
}

TEST(NcclPlaneMemory, AllocatedDeviceMemoryCarriesCollectives) {
  EXPECT_EQ(runRanks(3, [](Communicator& c, int rank) { return allocated(c, rank, 3); }), "");
  EXPECT_EQ(runRanks(
                2, [](Communicator& c, int rank) { return allocated(c, rank, 2); },
                [](int) { ::setenv("SMDDP_NCCL_LIBRARY", SMDDP_TEST_NCCL_MINIMAL_PATH, 1); }),
            "");
}

// A group shrunk from another (rank 1 left out): its NCCL communicator is shrunk from the
// parent's where the loaded NCCL has ncclCommShrink (the full test NCCL), formed anew where it
// has not (the oldest NCCL taken); either way it reduces right.
std::string shrinkRun(const char* library, const std::string& formedBy) {
  const std::string dir = test::makeTempDir("smddp-mp-nccl-shrink");
  const std::string report = test::forkRanks(3, 120s, [&](int rank) {
    if (library != nullptr) ::setenv("SMDDP_NCCL_LIBRARY", library, 1);
    auto parent = join(dir, rank, 3);
    void* s = device_api::createStream(0);
    DeviceArray<int32_t> x(s, std::vector<int32_t>(1001, rank + 1));
    parent->allReduce(x.buf(DataType::kInt32), x.buf(DataType::kInt32), ReduceOp::kSum).wait();
    if (expectEqual(rank, "the parent's all_reduce", x.get(), std::vector<int32_t>(1001, 6))) {
      return 1;
    }
    if (rank == 1) return 0;  // left out
    Options opts;
    opts.provider = "shm";
    opts.timeout = 60s;
    opts.name = "child";
    opts.generation = "x1";
    auto child = Communicator::create(makeFileStore(dir), rank == 0 ? 0 : 1, 2, opts);
    child->shrinkDevicePlaneOf(*parent, {1});
    DeviceArray<int32_t> y(s, std::vector<int32_t>(777, rank + 1));
    child->allReduce(y.buf(DataType::kInt32), y.buf(DataType::kInt32), ReduceOp::kSum).wait();
    if (expectEqual(rank, "the shrunk group's all_reduce", y.get(), std::vector<int32_t>(777, 4))) {
      return 1;
    }
    if (child->ncclFormedBy() != formedBy) {
      std::fprintf(stderr, "rank %d: formed by %s, expected %s\n", rank,
                   child->ncclFormedBy().c_str(), formedBy.c_str());
      return 1;
    }
    child.reset();
    device_api::destroyStream(s);
    return 0;
  });
  test::removeTree(dir);
  return report;
}

TEST(NcclPlaneShrink, AShrunkGroupDerivesItsCommunicatorWhereNcclCan) {
  EXPECT_EQ(shrinkRun(nullptr, "ncclCommShrink"), "");
  EXPECT_EQ(shrinkRun(SMDDP_TEST_NCCL_MINIMAL_PATH, "ncclCommInitRankConfig"), "");
}

// Estimates cost a CUDA call as the NCCL plane runs it (NCCL's ring on the GPUs' fabric, the
// model's 360 GB/s prior: above its bytes at that rate, below the staging copies alone), and a
// pair NCCL lacks (BOR) as smddp's plane, staging copies included (20 GB/s each way).
TEST(NcclPlaneEstimates, CudaCallsAreCostedOnTheirPlane) {
  const int n = 3;
  EXPECT_EQ(runRanks(n, [n](Communicator& c, int rank) {
              const size_t count = 16 << 20;  // 64 MiB of int32
              void* s = device_api::createStream(0);
              void* buf = device_api::alloc(count * 4, 0);
              const Buffer b(buf, count, DataType::kInt32, MemoryType::kCuda, 0, s);
              c.beginEstimate();
              c.allReduce(b, b, ReduceOp::kSum).wait();
              const double nccl = c.endEstimate() * 1e-6;
              c.beginEstimate();
              c.allReduce(b, b, ReduceOp::kBor).wait();
              const double own = c.endEstimate() * 1e-6;
              device_api::free(buf);
              device_api::destroyStream(s);
              const double bytes = count * 4.0;
              const double ring = 2.0 * (n - 1) / n * bytes / 360e9, staging = 2 * bytes / 20e9;
              if (!(nccl > ring && nccl < staging && own > staging)) {
                std::fprintf(stderr, "rank %d: estimates: nccl %g s (ring %g s), smddp's %g s "
                             "(staging %g s)\n", rank, nccl, ring, own, staging);
                return 1;
              }
              return 0;
            }),
            "");
}

}  // namespace
}  // namespace smddp
