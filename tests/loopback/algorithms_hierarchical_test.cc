// SPDX-License-Identifier: Apache-2.0
// The hierarchical all_reduce algorithms (hier_direct, hier_leader, hier_split) over thread-ranks
// laid out as several hosts (runRanksOnHosts: rank r on host r % hosts, a heap arena per host,
// the cross groups over the loopback transport): the closed-form all_reduce matrix for odd and
// even host counts and ranks per host; many chunks with recursive-doubling and ring cross steps;
// every rank ending with the same bits on random floats, equal to the flat ring's where the sums
// are exact; and a clear error without host groups.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "algorithms_checks.h"
#include "smddp/error.h"

namespace smddp::algo::testing {
namespace {

using K = CollectiveKind;

class HierAllReduce : public ::testing::TestWithParam<std::tuple<const char*, int, int>> {};

TEST_P(HierAllReduce, Matrix) {
  const auto [name, hosts, perHost] = GetParam();
  const Algorithm& a = algorithm(K::kAllReduce, name);
  const std::vector<AllReduceCase> cases = allReduceCases(hosts * perHost);
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    for (const AllReduceCase& c : cases) checkAllReduce(ctx, a, c);
  });
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierAllReduce,
                         ::testing::Combine(::testing::Values("hier_direct", "hier_leader",
                                                              "hier_split"),
                                            ::testing::Values(2, 3, 5),     // hosts
                                            ::testing::Values(2, 3)));      // ranks per host

// Many chunks of both slots (4 KiB slots), a count no split divides, and a 7-host layout.
TEST(HierAllReduce, ManyChunksOddCountSevenHosts) {
  for (const char* name : {"hier_direct", "hier_leader", "hier_split"}) {
    const Algorithm& a = algorithm(K::kAllReduce, name);
    runRanksOnHosts(7, 2, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {100003, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {100003, DataType::kBFloat16, ReduceOp::kAvg, true, kTinySegment});
    });
  }
}

// Blocks above 64 KiB: hier_split's cross step (and hier_leader's, a 1 MiB slot's chunk at a time)
// is a ring, segmented (65536-byte segments: several per block) and pipelined; 1 MiB slots, so
// each arena phase also takes several uses.
TEST(HierAllReduce, CrossRingWithLargeSlots) {
  for (const char* name : {"hier_split", "hier_leader"}) {
    const Algorithm& a = algorithm(K::kAllReduce, name);
    runRanksOnHosts(3, 2, [&](RankContext& ctx) {
      checkAllReduce(ctx, a, {600001, DataType::kFloat32, ReduceOp::kSum, false, 1 << 20});
      checkAllReduce(ctx, a, {600001, DataType::kInt32, ReduceOp::kMax, true, 65536});
    }, size_t{1} << 20);
  }
}

// Random floats (inexact sums): every rank ends with the same bits; with integer-valued floats
// (exact sums) the result equals the flat ring's bit for bit.
TEST(HierAllReduce, SameBitsOnEveryRankAndFlatWhereExact) {
  constexpr int kHosts = 3, kPerHost = 2, kRanks = kHosts * kPerHost;
  constexpr size_t kCount = 20011;
  for (const char* name : {"hier_direct", "hier_leader", "hier_split"}) {
    for (bool exact : {false, true}) {
      std::vector<std::vector<float>> results(kRanks), flat(kRanks);
      auto input = [&](int rank) {
        std::mt19937 gen(1234 + rank);
        std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
        std::vector<float> v(kCount);
        for (float& x : v) x = exact ? static_cast<float>(static_cast<int>(dist(gen) * 100)) : dist(gen);
        return v;
      };
      auto runWith = [&](const Algorithm& a, std::vector<std::vector<float>>& out, bool hosts) {
        auto body = [&](RankContext& ctx) {
          std::vector<float> send = input(ctx.rank), recv(kCount);
          CollectiveArgs args;
          args.kind = K::kAllReduce;
          args.send = send.data();
          args.recv = recv.data();
          args.count = kCount;
          args.dtype = DataType::kFloat32;
          args.op = ReduceOp::kSum;
          ctx.run(a, args, 1 << 20);
          out[static_cast<size_t>(ctx.rank)] = recv;
        };
        if (hosts) {
          runRanksOnHosts(kHosts, kPerHost, body);
        } else {
          runRanks(kRanks, body);
        }
      };
      runWith(algorithm(K::kAllReduce, name), results, true);
      for (int r = 1; r < kRanks; ++r) {
        EXPECT_EQ(std::memcmp(results[0].data(), results[r].data(), kCount * sizeof(float)), 0)
            << name << ": rank " << r << " differs from rank 0";
      }
      if (!exact) continue;
      runWith(algorithm(K::kAllReduce, "ring"), flat, false);
      EXPECT_EQ(std::memcmp(results[0].data(), flat[0].data(), kCount * sizeof(float)), 0)
          << name << " differs from the flat ring on exact sums";
    }
  }
}

TEST(HierAllReduce, WithoutHostGroupsFailsNamingTheCollective) {
  runRanks(2, [](RankContext& ctx) {
    std::vector<float> send(8, 1.0f), recv(8);
    CollectiveArgs args;
    args.kind = K::kAllReduce;
    args.send = send.data();
    args.recv = recv.data();
    args.count = 8;
    args.dtype = DataType::kFloat32;
    try {
      ctx.run(algorithm(K::kAllReduce, "hier_split"), args, 1 << 20);
      ctx.fail("no error without host groups");
    } catch (const Error& e) {
      const std::string what = e.what();
      if (e.code() != ErrorCode::kInvalidArgument || what.find("all_reduce") == std::string::npos ||
          what.find("several hosts") == std::string::npos) {
        ctx.fail("wrong error: " + what);
      }
    }
  });
}

}  // namespace
}  // namespace smddp::algo::testing
