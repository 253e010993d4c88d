// SPDX-License-Identifier: Apache-2.0
// Collectives on device memory in separate processes over real libfabric (shm with the arena, and
// tcp), through the public API only, on the fake device with random stream delays (ctest sets
// SMDDP_DEVICE=fake, SMDDP_FAKE_DEVICE_DELAY_US and a 64 KiB SMDDP_STAGING_BYTES; the GPU script
// runs it again with SMDDP_DEVICE=cuda, several ranks on one GPU). Within one host the collectives
// go through CUDA IPC (all_reduce's slices reduced in rank order): random floats give the same
// bits on every rank, within rounding of the host call; staged through host memory
// (Options::deviceIpc false, the "Staged" cases) they give the host call's bits. Exact values,
// multi-segment (all_reduce, broadcast, all_gather, reduce_scatter AVG, all_to_all), give the
// closed form either way. Children report the first wrong element and exit non-zero.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fork_ranks.h"
#include "smddp/device.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;

struct Case {
  std::string provider;
  int ranks;
};

// A device copy of `host`, run through `fn`, and read back; everything on `stream`.
template <typename Fn>
std::vector<float> onDevice(const std::vector<float>& host, size_t outCount, void* stream, Fn fn) {
  const size_t inBytes = host.size() * sizeof(float);
  const size_t outBytes = outCount * sizeof(float);
  void* in = device_api::alloc(std::max<size_t>(inBytes, 4), 0);
  void* out = device_api::alloc(std::max<size_t>(outBytes, 4), 0);
  device_api::copyAsync(in, host.data(), inBytes, stream);
  fn(in, out);
  device_api::synchronize(stream, 60s);  // bounded: the pageable copy below could block unbounded
  std::vector<float> result(outCount);
  device_api::copyAsync(result.data(), out, outBytes, stream);
  device_api::synchronize(stream, 60s);
  device_api::free(in);
  device_api::free(out);
  return result;
}

int firstWrong(int rank, const char* what, size_t count, const std::vector<float>& got,
               const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0) {
      std::fprintf(stderr, "rank %d: %s count %zu index %zu: got %a expected %a\n", rank, what,
                   count, i, got[i], want[i]);
      return 1;
    }
  }
  return 0;
}

// Every rank holds the same bits as rank 0 (compared on the host).
int sameOnEveryRank(Communicator& c, int rank, int n, const std::vector<float>& mine) {
  std::vector<float> all(mine.size() * static_cast<size_t>(n));
  c.allGatherBlocking(Buffer(mine.data(), mine.size(), DataType::kFloat32),
                      Buffer(all.data(), all.size(), DataType::kFloat32));
  return std::memcmp(all.data(), mine.data(), mine.size() * sizeof(float)) == 0
             ? 0
             : firstWrong(rank, "all_reduce: same bits as rank 0", mine.size(), mine,
                          std::vector<float>(all.begin(), all.begin() + mine.size()));
}

int withinRounding(int rank, int n, size_t count, const std::vector<float>& got,
                   const std::vector<float>& want) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::fabs(got[i] - want[i]) > 4e-7f * static_cast<float>(n)) {
      std::fprintf(stderr, "rank %d: all_reduce vs host count %zu index %zu: got %a expected %a\n",
                   rank, count, i, got[i], want[i]);
      return 1;
    }
  }
  return 0;
}

int checkRank(Communicator& c, int rank, int n, bool exactVsHost) {
  const auto F = DataType::kFloat32;
  void* s = device_api::createStream(0);
  auto dev = [s](void* p, size_t count) { return Buffer(p, count, F, MemoryType::kCuda, 0, s); };
  std::mt19937 rng(static_cast<unsigned>(rank + 1));
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (size_t count : {size_t{1}, size_t{1000}, size_t{12345}}) {  // one segment: same bits
    std::vector<float> x(count), host(count);
    for (float& v : x) v = u(rng);
    c.allReduceBlocking(Buffer(x.data(), count, F), Buffer(host.data(), count, F), ReduceOp::kSum);
    const auto got = onDevice(x, count, s, [&](void* in, void* out) {
      c.allReduce(dev(in, count), dev(out, count), ReduceOp::kSum).waitOnStream(s);
    });
    if (exactVsHost
            ? firstWrong(rank, "all_reduce vs host", count, got, host)
            : withinRounding(rank, n, count, got, host) || sameOnEveryRank(c, rank, n, got)) {
      return 1;
    }
  }
  for (size_t count : {size_t{300001}}) {  // exact values, 19 segments of 64 KiB
    std::vector<float> x(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      x[i] = static_cast<float>(rank + 1 + static_cast<int>(i % 97));
      want[i] = static_cast<float>(n * (n + 1) / 2 + n * static_cast<int>(i % 97));
    }
    const auto got = onDevice(x, count, s, [&](void* in, void* out) {
      c.allReduce(dev(in, count), dev(out, count), ReduceOp::kSum).waitOnStream(s);
    });
    if (firstWrong(rank, "all_reduce segmented", count, got, want)) return 1;
    const int root = n - 1;
    std::vector<float> rootData(count);
    for (size_t i = 0; i < count; ++i) rootData[i] = static_cast<float>(root * 1000 + i % 1000);
    const auto bcast = onDevice(rank == root ? rootData : x, count, s, [&](void* in, void* out) {
      c.broadcast(dev(in, count), dev(out, count), root).waitOnStream(s);
    });
    if (firstWrong(rank, "broadcast", count, bcast, rootData)) return 1;
  }
  const size_t per = 4099;
  std::vector<float> mine(per), all(per * static_cast<size_t>(n));
  for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<float>(i);
  std::memcpy(mine.data(), all.data() + rank * per, per * sizeof(float));
  const auto gathered = onDevice(mine, all.size(), s, [&](void* in, void* out) {
    c.allGather(dev(in, per), dev(out, all.size())).wait();  // the host waits this time
  });
  if (firstWrong(rank, "all_gather", per, gathered, all)) return 1;
  // reduce_scatter (AVG of exact values) and all_to_all, several chunks of the scratch each
  const auto un = static_cast<size_t>(n);
  std::vector<float> blocks(per * un), avg(per), a2a(per * un);
  for (size_t i = 0; i < blocks.size(); ++i) {
    blocks[i] = static_cast<float>(rank + 1 + static_cast<int>(i % 97));
  }
  for (size_t i = 0; i < per; ++i) {
    const int v = static_cast<int>((static_cast<size_t>(rank) * per + i) % 97);
    avg[i] = static_cast<float>(n * (n + 1) / 2 + n * v) / static_cast<float>(n);
  }
  const auto scattered = onDevice(blocks, per, s, [&](void* in, void* out) {
    c.reduceScatter(dev(in, per * un), dev(out, per), ReduceOp::kAvg).waitOnStream(s);
  });
  if (firstWrong(rank, "reduce_scatter avg", per, scattered, avg)) return 1;
  auto tag = [](size_t from, size_t to, size_t i) {
    return static_cast<float>(from * 100 + to + (i % 50) * 1000);
  };
  for (size_t q = 0; q < un; ++q) {
    for (size_t i = 0; i < per; ++i) {
      blocks[q * per + i] = tag(static_cast<size_t>(rank), q, i);
      a2a[q * per + i] = tag(q, static_cast<size_t>(rank), i);
    }
  }
  const auto exchanged = onDevice(blocks, per * un, s, [&](void* in, void* out) {
    c.allToAll(dev(in, per * un), dev(out, per * un)).waitOnStream(s);
  });
  if (firstWrong(rank, "all_to_all", per, exchanged, a2a)) return 1;
  device_api::destroyStream(s);
  return 0;
}

class MpDevice : public ::testing::TestWithParam<Case> {};

void runCase(const Case& p, bool exactVsHost) {
  const std::string dir = test::makeTempDir("smddp-mp-device");
  const std::string report = test::forkRanks(p.ranks, 120s, [&](int rank) {
    if (device_api::name().empty()) {  // ctest sets SMDDP_DEVICE=fake; a GPU run, cuda
      std::fprintf(stderr, "rank %d: no device layer is usable (SMDDP_DEVICE)\n", rank);
      return 1;
    }
    Options opts;
    opts.provider = p.provider;
    opts.timeout = 60s;
    opts.deviceIpc = !exactVsHost;
    auto comm = Communicator::create(makeFileStore(dir), rank, p.ranks, opts);
    return checkRank(*comm, rank, p.ranks, exactVsHost);
  });
  test::removeTree(dir);
  EXPECT_EQ(report, "");
}

TEST_P(MpDevice, Collectives) { runCase(GetParam(), false); }
TEST_P(MpDevice, StagedEqualsTheHostBitForBit) { runCase(GetParam(), true); }

INSTANTIATE_TEST_SUITE_P(Providers, MpDevice,
                         ::testing::Values(Case{"shm", 2}, Case{"shm", 3}, Case{"tcp", 3}),
                         [](const auto& info) {
                           return info.param.provider + std::to_string(info.param.ranks);
                         });

}  // namespace
}  // namespace smddp
