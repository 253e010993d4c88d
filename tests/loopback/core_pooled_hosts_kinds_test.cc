// SPDX-License-Identifier: Apache-2.0
// The hierarchical all_gather, reduce_scatter and broadcast across hosts on tensors in smddp's
// shareable memory (Communicator::allocateShared; hierarchical_in_place.cc) over thread-ranks
// standing for 2 and 3 hosts: all_gather in place, reduce_scatter SUM in place and AVG out of
// place, broadcast from a rank of the first and of the last host, equal to the closed form. From
// 1 MiB each host runs its arena phases in place (counted per rank) when the buffers it reads in
// its peers are shared, through its arena otherwise, while the other hosts stay in place; below
// 1 MiB nothing runs in place. On hosts of 3, 2 and 1 ranks the leader forms of broadcast (from
// every host and local index) and all_reduce run in place on each host of several ranks whose
// buffers read are shared.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loopback/loopback_group.h"
#include "loopback/shared_buffer.h"

namespace smddp::testing {
namespace {

template <typename T>
using Buf = SharedOrPlain<T>;

int32_t value(int r, size_t i) { return rankValue(r, i); }

// Five calls on every rank with blocks of `block` elements (broadcast: n x block);
// `shared(r)`: whether rank r's buffers are shared. Returns the calls counted in place over all
// ranks.
uint64_t run(const std::vector<int>& hostOf, size_t block, const std::function<bool(int)>& shared) {
  Options o;
  o.timeout = std::chrono::seconds(30);
  o.algorithms = "allgather:hier,reduce_scatter:hier,broadcast:hier";
  auto comms = makeLoopbackHosts(hostOf, o, nullptr, 0, true, 4096);
  const int n = static_cast<int>(hostOf.size());
  const auto un = static_cast<size_t>(n);
  const uint64_t before = comms[0]->memoryStats().at("shared_in_place_calls");
  runRanks(comms, [&](int rank, Communicator& c) {
    const bool mine = shared(rank);
    const DataType i32 = DataType::kInt32;
    const auto me = static_cast<size_t>(rank);
    // all_gather in place: the input is block `rank` of the output
    Buf<int32_t> g(c, block * un, mine);
    for (size_t i = 0; i < block * un; ++i)
      g.data[i] = i / block == me ? value(rank, i % block) : -1;
    c.allGather(Buffer(g.data + me * block, block, i32), Buffer(g.data, block * un, i32)).wait();
    for (size_t i = 0; i < block * un; ++i) {
      ASSERT_EQ(g.data[i], value(static_cast<int>(i / block), i % block)) << "all_gather " << i;
    }
    // reduce_scatter SUM in place: the output is block `rank` of the input
    Buf<int32_t> s(c, block * un, mine);
    for (size_t i = 0; i < block * un; ++i) s.data[i] = value(rank, i);
    int32_t* out = s.data + me * block;
    c.reduceScatter(Buffer(s.data, block * un, i32), Buffer(out, block, i32), ReduceOp::kSum)
        .wait();
    for (size_t i = 0; i < block; ++i) {
      int32_t want = 0;
      for (int q = 0; q < n; ++q) want += value(q, me * block + i);
      ASSERT_EQ(out[i], want) << "reduce_scatter [" << i << "] rank " << rank;
    }
    // reduce_scatter AVG out of place, float; the input is kept
    Buf<float> fin(c, block * un, mine), fout(c, block, mine);
    for (size_t i = 0; i < block * un; ++i) fin.data[i] = static_cast<float>(value(rank, i));
    c.reduceScatter(Buffer(fin.data, block * un, DataType::kFloat32),
                    Buffer(fout.data, block, DataType::kFloat32), ReduceOp::kAvg)
        .wait();
    for (size_t i = 0; i < block; ++i) {
      float sum = 0;
      for (int q = 0; q < n; ++q) sum += static_cast<float>(value(q, me * block + i));
      ASSERT_FLOAT_EQ(fout.data[i], sum / static_cast<float>(n)) << "avg [" << i << "]";
      ASSERT_EQ(fin.data[me * block + i], static_cast<float>(value(rank, me * block + i)));
    }
    // broadcast from rank 0 (the first host) and from rank n - 1 (the last)
    for (int root : {0, n - 1}) {
      Buf<int32_t> b(c, block * un, mine);
      for (size_t i = 0; i < block * un; ++i) b.data[i] = rank == root ? value(root, i) : -1;
      c.broadcast(Buffer(b.data, block * un, i32), Buffer(b.data, block * un, i32), root).wait();
      for (size_t i = 0; i < block * un; ++i) {
        ASSERT_EQ(b.data[i], value(root, i)) << "broadcast from " << root << " [" << i << "]";
      }
    }
  });
  // The ranks share the process's pool here: its count is every rank's.
  return comms[0]->memoryStats().at("shared_in_place_calls") - before;
}

const std::vector<std::vector<int>> kLayouts = {
    {0, 0, 1, 1}, {0, 0, 0, 1, 1, 1}, {0, 1, 0, 1, 2, 2}};

// Blocks of a buffer (n blocks) just above 1 MiB of int32, an odd count.
size_t largeBlock(size_t n) { return (size_t{1} << 18) / n + 3; }

TEST(PooledHostsKinds, EveryHostInPlaceFromOneMiB) {
  for (const auto& hostOf : kLayouts) {
    SCOPED_TRACE("ranks " + std::to_string(hostOf.size()));
    const uint64_t calls = run(hostOf, largeBlock(hostOf.size()), [](int) { return true; });
    EXPECT_EQ(calls, 5 * hostOf.size());  // every call on every rank
  }
}

TEST(PooledHostsKinds, SmallAndEmptyCallsKeepTheArena) {
  for (size_t block : {size_t{1001}, size_t{3}, size_t{0}}) {
    SCOPED_TRACE("block " + std::to_string(block));
    EXPECT_EQ(run({0, 0, 1, 1}, block, [](int) { return true; }), 0u);
  }
}

// Rank 1 (host 0) holds ordinary memory: host 0 reads no peer's buffers in place except the
// root's input of the broadcast from rank 0 (the only buffer read there); host 1 stays in place.
TEST(PooledHostsKinds, AnOrdinaryRankKeepsItsHostOnTheArena) {
  const std::vector<int> hostOf = {0, 0, 0, 1, 1, 1};
  const size_t block = largeBlock(hostOf.size());
  // host 1: all five calls; host 0: the broadcast from rank 0 only
  EXPECT_EQ(run(hostOf, block, [](int r) { return r != 1; }), 5u * 3 + 1u * 3);
  EXPECT_EQ(run(hostOf, block, [](int) { return false; }), 0u);
}

// On hosts of 3, 2 and 1 ranks (the leader forms): broadcasts from a rank of every host, local
// index 1 too, then all_reduce SUM in place (int32) and AVG out of place (float, the input kept),
// of `count` elements; `shared(r)` as above. Returns the calls counted in place.
uint64_t runUneven(size_t count, const std::function<bool(int)>& shared) {
  const std::vector<int> hostOf = {0, 0, 0, 1, 1, 2};
  const int n = static_cast<int>(hostOf.size());
  Options o;
  o.timeout = std::chrono::seconds(30);
  o.algorithms = "broadcast:hier_leader,allreduce:hier_leader";
  auto comms = makeLoopbackHosts(hostOf, o, nullptr, 0, true, 4096);
  const uint64_t before = comms[0]->memoryStats().at("shared_in_place_calls");
  runRanks(comms, [&](int rank, Communicator& c) {
    const bool mine = shared(rank);
    for (int root : {0, 3, 4, 5}) {
      Buf<int32_t> b(c, count, mine);
      for (size_t i = 0; i < count; ++i) b.data[i] = rank == root ? value(root, i) : -1;
      // From rank 3 out of place: every rank's input is another buffer (the root's holds the
      // data, the others' -2, which nobody must read).
      std::vector<int32_t> in(root == 3 ? count : 0, -2);
      if (rank == root) {
        for (size_t i = 0; i < in.size(); ++i) in[i] = value(root, i);
      }
      const Buffer from(in.empty() ? b.data : in.data(), count, DataType::kInt32);
      c.broadcast(from, Buffer(b.data, count, DataType::kInt32), root).wait();
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(b.data[i], value(root, i)) << "broadcast from " << root << " [" << i << "]";
      }
    }
    checkAllReduces(c, rank, n, count, mine);
  });
  return comms[0]->memoryStats().at("shared_in_place_calls") - before;
}

TEST(PooledHostsKinds, UnevenHostsInPlaceWhereTheBuffersReadAreShared) {
  const size_t count = (size_t{1} << 18) + 5;  // just above 1 MiB of int32
  // Hosts 0 and 1 (5 ranks) in place for each of the 6 calls; the host of one rank never.
  EXPECT_EQ(runUneven(count, [](int) { return true; }), 6u * 5);
  // Rank 4 (host 1, local index 1) ordinary: host 1's broadcasts are in place where its carrier
  // is rank 3, shared (every root but rank 4); its all_reduces read rank 4's input: arena. Host 0
  // stays in place.
  EXPECT_EQ(runUneven(count, [](int r) { return r != 4; }), 6u * 3 + 3u * 2);
  EXPECT_EQ(runUneven(1001, [](int) { return true; }), 0u);
  EXPECT_EQ(runUneven(0, [](int) { return true; }), 0u);
}

}  // namespace
}  // namespace smddp::testing
