// SPDX-License-Identifier: Apache-2.0
// The hierarchical all_gather, reduce_scatter, broadcast and barrier (hier, and hier_leader for
// all but the barrier) over thread-ranks laid out as several hosts (runRanksOnHosts: rank r
// on host r % hosts, so a host's ranks are not consecutive; a heap arena of 4 KiB slots per
// host): the closed-form checks of the flat algorithms' tests for odd and even host counts and
// ranks per host, every dtype and op, in place and out of place, block-list outputs, every root;
// counts below the ranks per host (empty slices), several arena uses, and ring / chain network
// steps; the same bits as the flat ring reduce_scatter where the sums are exact; no rank leaving
// a barrier before every rank arrived; a clear error without host groups.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "algorithms_checks.h"
#include "smddp/error.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

class HierLayouts : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(HierLayouts, AllGather) {
  const auto [hosts, perHost] = GetParam();
  for (const char* name : {"hier", "hier_leader"}) {
    const Algorithm& a = algorithm(K::kAllGather, name);
    runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
      for (size_t count : {size_t{1}, size_t{13}, size_t{1037}}) {
        for (DataType dt : kAllDataTypes) {
          for (Output o : {Output::kContiguous, Output::kBlockList, Output::kInPlace}) {
            checkAllGather(ctx, a, count, dt, o, kTinySegment);
          }
        }
      }
    });
  }
}

TEST_P(HierLayouts, ReduceScatter) {
  const auto [hosts, perHost] = GetParam();
  const std::vector<AllReduceCase> cases = allReduceCases(hosts * perHost);
  for (const char* name : {"hier", "hier_leader"}) {
    const Algorithm& a = algorithm(K::kReduceScatter, name);
    runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
      for (const AllReduceCase& c : cases) checkReduceScatter(ctx, a, c);
    });
  }
}

TEST_P(HierLayouts, BroadcastFromEveryRoot) {
  const auto [hosts, perHost] = GetParam();
  for (const char* name : {"hier", "hier_leader"}) {
    const Algorithm& a = algorithm(K::kBroadcast, name);
    runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
      size_t salt = 0;
      for (int root = 0; root < ctx.size; ++root) {
        for (size_t count : {size_t{1}, size_t{2}, size_t{1037}, size_t{5000}}) {
          for (bool inPlace : {false, true}) {
            checkBroadcast(ctx, a, count, DataType::kFloat32, root, inPlace, kTinySegment,
                           ++salt);
          }
        }
      }
      for (DataType dt : kAllDataTypes) {
        checkBroadcast(ctx, a, 777, dt, ctx.size - 1, false, kTinySegment, ++salt);
      }
    });
  }
}

// Each rank arrives late by a rank-dependent delay and counts itself in before the barrier; after
// it every rank must see all n arrivals of that round.
TEST_P(HierLayouts, BarrierNoRankLeavesEarly) {
  const auto [hosts, perHost] = GetParam();
  const int n = hosts * perHost;
  constexpr int kRounds = 6;
  std::vector<std::atomic<int>> arrived(kRounds);
  for (auto& x : arrived) x = 0;
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    for (int round = 0; round < kRounds; ++round) {
      if ((ctx.rank + round) % n == n - 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      arrived[static_cast<size_t>(round)].fetch_add(1);
      ctx.run(algorithm(K::kBarrier, "hier"), CollectiveArgs(Call::of(K::kBarrier,
                                                                      DataType::kUInt8, 0),
                                                             nullptr, nullptr),
              262144);
      const int seen = arrived[static_cast<size_t>(round)].load();
      if (seen != n) {
        ctx.fail("round " + std::to_string(round) + ": left after " + std::to_string(seen) +
                 " of " + std::to_string(n) + " arrived");
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierLayouts,
                         ::testing::Combine(::testing::Values(2, 3, 5),  // hosts
                                            ::testing::Values(2, 3)));   // ranks per host

// 7 hosts; 1 MiB slots and large buffers, so the network step is the ring (all_gather,
// reduce_scatter) or the chain (broadcast), segmented and pipelined, and the arena steps take
// several uses.
TEST(HierCollectives, LargeBuffersSevenHosts) {
  runRanksOnHosts(7, 2, [&](RankContext& ctx) {
    checkAllGather(ctx, algorithm(K::kAllGather, "hier"), 70001, DataType::kFloat32,
                   Output::kContiguous, 65536);
    checkAllGather(ctx, algorithm(K::kAllGather, "hier"), 70001, DataType::kInt8,
                   Output::kBlockList, 65536);
    checkReduceScatter(ctx, algorithm(K::kReduceScatter, "hier"),
                       {70001, DataType::kFloat32, ReduceOp::kSum, false, 65536});
    checkReduceScatter(ctx, algorithm(K::kReduceScatter, "hier"),
                       {70001, DataType::kBFloat16, ReduceOp::kAvg, true, 65536});
    checkBroadcast(ctx, algorithm(K::kBroadcast, "hier"), 600001, DataType::kFloat32, 5, false,
                   65536, 1);
    checkBroadcast(ctx, algorithm(K::kBroadcast, "hier"), 600001, DataType::kInt32, 8, true,
                   65536, 2);
    checkAllGather(ctx, algorithm(K::kAllGather, "hier_leader"), 70001, DataType::kFloat32,
                   Output::kBlockList, 65536);
    checkBroadcast(ctx, algorithm(K::kBroadcast, "hier_leader"), 600001, DataType::kFloat32, 3,
                   false, 65536, 3);
    checkReduceScatter(ctx, algorithm(K::kReduceScatter, "hier_leader"),
                       {70001, DataType::kFloat32, ReduceOp::kAvg, true, 65536});
  }, size_t{1} << 20);
}

// Ranks numbered host by host (rank = h L + q, as launchers number them), where rank numbers and
// slot positions coincide less by chance than in the interleaved layout: every algorithm once.
TEST(HierCollectives, ConsecutiveLayout) {
  runRanksOnHosts(3, 3, [&](RankContext& ctx) {
    size_t salt = 0;
    for (const char* name : {"hier", "hier_leader"}) {
      checkAllGather(ctx, algorithm(K::kAllGather, name), 301, DataType::kFloat32,
                     Output::kContiguous, kTinySegment);
      checkReduceScatter(ctx, algorithm(K::kReduceScatter, name),
                         {301, DataType::kInt32, ReduceOp::kSum, false, kTinySegment});
      for (int root : {0, 4, 8}) {
        checkBroadcast(ctx, algorithm(K::kBroadcast, name), 1001, DataType::kFloat32, root, false,
                       kTinySegment, ++salt);
      }
    }
    for (const char* name : {"hier_direct", "hier_leader", "hier_split"}) {
      checkAllReduce(ctx, algorithm(K::kAllReduce, name),
                     {3001, DataType::kFloat32, ReduceOp::kSum, false, kTinySegment});
    }
    ctx.run(algorithm(K::kBarrier, "hier"),
            CollectiveArgs(Call::of(K::kBarrier, DataType::kUInt8, 0), nullptr, nullptr), 262144);
  }, 4096, true);
}

// Integer-valued floats (exact sums in any order): the result equals the flat ring's bit for bit.
TEST(HierCollectives, ReduceScatterEqualsFlatRingWhereExact) {
  constexpr int kHosts = 3, kPerHost = 2, kRanks = kHosts * kPerHost;
  constexpr size_t kCount = 3001;
  std::vector<std::vector<float>> hier(kRanks), flat(kRanks);
  auto runWith = [&](const Algorithm& a, std::vector<std::vector<float>>& out, bool hosts) {
    auto body = [&](RankContext& ctx) {
      std::mt19937 gen(99 + ctx.rank);
      std::uniform_int_distribution<int> dist(-1000, 1000);
      std::vector<float> send(kCount * kRanks), recv(kCount);
      for (float& x : send) x = static_cast<float>(dist(gen));
      CollectiveArgs args(Call::of(K::kReduceScatter, DataType::kFloat32, kCount, ReduceOp::kSum),
                          send.data(), recv.data());
      ctx.run(a, args, 1 << 20);
      out[static_cast<size_t>(ctx.rank)] = recv;
    };
    if (hosts) {
      runRanksOnHosts(kHosts, kPerHost, body);
    } else {
      runRanks(kRanks, body);
    }
  };
  runWith(algorithm(K::kReduceScatter, "ring"), flat, false);
  for (const char* name : {"hier", "hier_leader"}) {
    runWith(algorithm(K::kReduceScatter, name), hier, true);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(std::memcmp(hier[r].data(), flat[r].data(), kCount * sizeof(float)), 0)
          << "rank " << r << ": " << name << " differs from the flat ring on exact sums";
    }
  }
}

TEST(HierCollectives, WithoutHostGroupsFailNamingTheCollective) {
  runRanks(2, [](RankContext& ctx) {
    std::vector<float> send(16, 1.0f), recv(16);
    for (auto [kind, name] : {std::pair{K::kAllGather, "hier"}, {K::kReduceScatter, "hier"},
                              {K::kBroadcast, "hier"}, {K::kBarrier, "hier"},
                              {K::kBroadcast, "hier_leader"}, {K::kAllGather, "hier_leader"},
                              {K::kReduceScatter, "hier_leader"}, {K::kReduce, "hier"},
                              {K::kGather, "hier"}, {K::kScatter, "hier"}}) {
      CollectiveArgs args(Call::of(kind, DataType::kFloat32, 8, ReduceOp::kSum), send.data(),
                          recv.data());
      try {
        ctx.run(algorithm(kind, name), args, 1 << 20);
        ctx.fail(std::string("no error without host groups: ") + toString(kind));
      } catch (const Error& e) {
        const std::string what = e.what();
        if (e.code() != ErrorCode::kInvalidArgument ||
            what.find(toString(kind)) == std::string::npos ||
            what.find("several hosts") == std::string::npos) {
          ctx.fail("wrong error: " + what);
        }
      }
    }
  });
}

}  // namespace
}  // namespace smddp::algo::testing
