// SPDX-License-Identifier: Apache-2.0
// Collectives on shareable memory (Communicator::allocateShared; algorithms/arena/pooled.cc)
// over thread-ranks with a heap arena: all_reduce (SUM on integers, AVG, in place), all_gather
// (in place, as FSDP2 calls it), reduce_scatter (in place) and broadcast from 1 MiB on 2, 3 and
// 5 ranks equal the closed form; they ran in place (counted) when every rank's buffers were
// shared, and through the arena when one rank's were ordinary (mixed calls stay right). Small calls
// keep the arena. memoryStats accounts for the memory; freed memory is reused.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/arena/pool.h"
#include "loopback/loopback_group.h"
#include "loopback/shared_buffer.h"

namespace smddp::testing {
namespace {

template <typename T>
using Buf = SharedOrPlain<T>;

Options bounded() {
  Options o;
  o.timeout = std::chrono::seconds(30);
  return o;
}

int32_t value(int r, size_t i) { return rankValue(r, i); }

// Every kind once on every rank; `shared(r)`: whether rank r's buffers are shared memory.
// `inPlace`: the calls expected in place on each rank.
void runKinds(int n, const std::function<bool(int)>& shared, uint64_t inPlace) {
  auto comms = makeLoopbackGroup(n, bounded(), nullptr, 4096);
  const uint64_t before = comms[0]->memoryStats().at("shared_in_place_calls");
  const size_t count = 262144 + 7;  // 1 MiB of int32 and a few elements
  runRanks(comms, [&](int rank, Communicator& c) {
    const bool mine = shared(rank);
    const auto un = static_cast<size_t>(n);
    const DataType i32 = DataType::kInt32;
    checkAllReduces(c, rank, n, count, mine);  // SUM in place, AVG out of place
    // all_gather in place: the input is block `rank` of the output
    const size_t block = count / un + 1;
    Buf<int32_t> g(c, block * un, mine);
    for (size_t i = 0; i < block; ++i)
      g.data[static_cast<size_t>(rank) * block + i] = value(rank, i);
    c.allGather(Buffer(g.data + static_cast<size_t>(rank) * block, block, i32),
                Buffer(g.data, block * un, i32))
        .wait();
    for (size_t i = 0; i < block * un; ++i) {
      ASSERT_EQ(g.data[i], value(static_cast<int>(i / block), i % block)) << "all_gather " << i;
    }
    // reduce_scatter in place: the output is block `rank` of the input
    Buf<int32_t> s(c, block * un, mine);
    for (size_t i = 0; i < block * un; ++i) s.data[i] = value(rank, i);
    int32_t* out = s.data + static_cast<size_t>(rank) * block;
    c.reduceScatter(Buffer(s.data, block * un, i32), Buffer(out, block, i32), ReduceOp::kSum)
        .wait();
    for (size_t i = 0; i < block; ++i) {
      int32_t want = 0;
      for (int q = 0; q < n; ++q) want += value(q, static_cast<size_t>(rank) * block + i);
      ASSERT_EQ(out[i], want) << "reduce_scatter [" << i << "] rank " << rank;
    }
    // broadcast from the last rank
    Buf<int32_t> b(c, count, mine);
    for (size_t i = 0; i < count; ++i) b.data[i] = rank == n - 1 ? value(rank, i) : -1;
    c.broadcast(Buffer(b.data, count, i32), Buffer(b.data, count, i32), n - 1).wait();
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(b.data[i], value(n - 1, i)) << "broadcast " << i;
    if (mine) {
      EXPECT_GE(c.memoryStats().at("shared_allocated"), 4 * count * 4) << rank;
    }
    EXPECT_GT(c.memoryStats().at("arena"), 2u * 4096 * static_cast<uint64_t>(n)) << rank;
    EXPECT_EQ(c.memoryStats().at("staging_pinned"), 0u) << rank;  // no CUDA call
    EXPECT_EQ(c.memoryStats().at("foreign_messages_dropped"), 0u) << rank;  // no strangers here
  });
  // The ranks share the process's pool here: its count is every rank's.
  const uint64_t calls = comms[0]->memoryStats().at("shared_in_place_calls") - before;
  EXPECT_EQ(calls, inPlace * static_cast<uint64_t>(n)) << "calls in place, on every rank";
}

TEST(Pooled, EveryKindInPlaceOnSharedMemory) {
  for (int n : {2, 3, 5}) {
    SCOPED_TRACE("world " + std::to_string(n));
    runKinds(
        n, [](int) { return true; }, 5);  // all_reduce x2, all_gather, reduce_scatter, bcast
  }
}

// The broadcast (root n - 1) needs only the root's input shared.
TEST(Pooled, OneOrdinaryRankTakesTheArenaAndStaysRight) {
  for (int n : {2, 3}) {
    SCOPED_TRACE("world " + std::to_string(n));
    runKinds(
        n, [](int r) { return r != 1; }, n == 3 ? 1 : 0);
    runKinds(
        n, [](int) { return false; }, 0);
  }
}

// Small calls keep the arena (nothing in place).
TEST(Pooled, SmallCallsKeepTheArena) {
  auto comms = makeLoopbackGroup(2, bounded(), nullptr, 4096);
  const uint64_t before = comms[0]->memoryStats().at("shared_in_place_calls");
  runRanks(comms, [&](int rank, Communicator& c) {
    Buf<float> x(c, 1000, true);
    for (size_t i = 0; i < 1000; ++i) x.data[i] = static_cast<float>(rank + 1);
    c.allReduce(Buffer(x.data, 1000, DataType::kFloat32), Buffer(x.data, 1000, DataType::kFloat32),
                ReduceOp::kSum)
        .wait();
    EXPECT_EQ(x.data[999], 3.0f);
  });
  EXPECT_EQ(comms[0]->memoryStats().at("shared_in_place_calls"), before);
}

TEST(Pooled, FreedMemoryIsReusedAndAccounted) {
  algo::arena::Pool pool;
  void* a = pool.allocate(1000);
  EXPECT_EQ(pool.stats().allocatedBytes, 4096u);
  EXPECT_TRUE(pool.locate(a, 4096).inPool());
  EXPECT_FALSE(pool.locate(static_cast<char*>(a) + 1, 4096).inPool());  // runs past the block
  int stack = 0;
  EXPECT_FALSE(pool.locate(&stack, sizeof stack).inPool());
  pool.release(a);
  EXPECT_FALSE(pool.locate(a, 16).inPool());  // freed: no longer a tensor's
  EXPECT_EQ(pool.stats().allocatedBytes, 0u);
  EXPECT_EQ(pool.stats().cachedBytes, 4096u);
  EXPECT_EQ(pool.allocate(3000), a);                 // the same class comes back
  void* big = pool.allocate((size_t{3} << 20) + 5);  // whole MiB above 1 MiB
  EXPECT_EQ(pool.stats().allocatedBytes, 4096u + (size_t{4} << 20));
  EXPECT_EQ(pool.stats().blocks, 2u);
  std::memset(big, 7, 16);
  EXPECT_THROW(pool.release(static_cast<char*>(big) + 1), Error);
  // A peer's block that cannot be opened (no such process): an error naming it, which the
  // collective turns into a vote for the arena.
  algo::arena::PoolRef gone;
  gone.pid = 0x7ffffff0;
  gone.fd = 3;
  gone.pool = 1;
  gone.block = 7;
  gone.blockBytes = 4096;
  try {
    pool.map(gone);
    ADD_FAILURE() << "mapped a block of no process";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInternal);
    EXPECT_NE(std::string(e.what()).find("block 7"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace smddp::testing
