// SPDX-License-Identifier: Apache-2.0
// hier_split all_reduce across hosts on tensors in smddp's shareable memory
// (Communicator::allocateShared; hierarchical_all_reduce.cc, arena/in_place.h) over thread-ranks
// standing for 2 and 3 hosts: SUM on integers in place, AVG on floats out of place, odd, tiny and
// zero counts, equal to the closed form; from 1 MiB each host runs its phases in place (counted
// per rank) when all its ranks' buffers are shared, through its arena when one is ordinary,
// while the other hosts stay in place (each host decides alone: the network step is the same).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "loopback/loopback_group.h"
#include "loopback/shared_buffer.h"

namespace smddp::testing {
namespace {

template <typename T>
using Buf = SharedOrPlain<T>;

// Two all_reduces per count on every rank; `shared(r)`: whether rank r's buffers are shared.
// Returns the calls counted in place over all ranks.
uint64_t run(const std::vector<int>& hostOf, const std::vector<size_t>& counts,
             const std::function<bool(int)>& shared) {
  Options o;
  o.timeout = std::chrono::seconds(30);
  o.algorithms = "allreduce:hier_split";
  auto comms = makeLoopbackHosts(hostOf, o, nullptr, 0, true, 4096);
  const int n = static_cast<int>(hostOf.size());
  const uint64_t before = comms[0]->memoryStats().at("shared_in_place_calls");
  runRanks(comms, [&](int rank, Communicator& c) {
    for (size_t count : counts) {
      SCOPED_TRACE("count " + std::to_string(count));
      checkAllReduces(c, rank, n, count, shared(rank));
    }
  });
  // The ranks share the process's pool here: its count is every rank's.
  return comms[0]->memoryStats().at("shared_in_place_calls") - before;
}

const std::vector<size_t> kCounts = {262144 + 7, 1001, 3, 0};
// Per rank: the two all_reduces of the count above 1 MiB; the smaller ones keep the arena.
constexpr uint64_t kRunCalls = 2;

TEST(PooledHosts, EveryHostInPlace) {
  for (const auto& hostOf : std::vector<std::vector<int>>{
           {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 1, 0, 1, 2, 2}}) {
    SCOPED_TRACE("ranks " + std::to_string(hostOf.size()));
    const auto calls = run(hostOf, kCounts, [](int) { return true; });
    EXPECT_EQ(calls, kRunCalls * hostOf.size());
  }
}

// Rank 1 (host 0) holds ordinary memory: host 0 takes its arena, the other host stays in place.
TEST(PooledHosts, AnOrdinaryRankKeepsItsHostOnTheArena) {
  const std::vector<int> hostOf = {0, 0, 0, 1, 1, 1};
  const auto calls = run(hostOf, kCounts, [](int r) { return r != 1; });
  EXPECT_EQ(calls, kRunCalls * 3);  // host 1's three ranks
  EXPECT_EQ(run(hostOf, kCounts, [](int) { return false; }), 0u);
}

}  // namespace
}  // namespace smddp::testing
