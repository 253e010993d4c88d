// SPDX-License-Identifier: Apache-2.0
// The public Communicator API end to end over the loopback transport: each collective, in place
// and out of place, list outputs, zero counts, one rank, asynchronous requests and callbacks.
// Expected values are closed forms of (rank, index).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "loopback_group.h"
#include "smddp/error.h"

namespace smddp {
namespace {

using testing::makeLoopbackGroup;
using testing::runRanks;

float value(int rank, size_t i) { return static_cast<float>((rank + 1) * 10 + static_cast<int>(i % 7)); }

// Runs each body on a thread of its own, joins them all, then rethrows the first error (so a
// failing wait reaches the rank's report instead of ending the process).
void runOnThreads(std::vector<std::function<void()>> bodies) {
  std::vector<std::exception_ptr> errors(bodies.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < bodies.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        bodies[i]();
      } catch (...) {
        errors[i] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

class CoreApi : public ::testing::TestWithParam<int> {};

TEST_P(CoreApi, AllReduceSumOutOfPlaceAndInPlace) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  for (size_t count : {size_t{1}, size_t{13}, size_t{1000}}) {
    runRanks(comms, [&](int rank, Communicator& c) {
      std::vector<float> in(count), out(count, -1.f);
      for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
      c.allReduce(Buffer(in.data(), count, DataType::kFloat32),
                  Buffer(out.data(), count, DataType::kFloat32), ReduceOp::kSum).wait();
      c.allReduce(Buffer(in.data(), count, DataType::kFloat32),
                  Buffer(in.data(), count, DataType::kFloat32), ReduceOp::kSum).wait();
      for (size_t i = 0; i < count; ++i) {
        float expect = 0;
        for (int r = 0; r < n; ++r) expect += value(r, i);
        ASSERT_EQ(out[i], expect) << "rank " << rank << " index " << i << " count " << count;
        ASSERT_EQ(in[i], expect) << "in place: rank " << rank << " index " << i;
      }
    });
  }
}

TEST_P(CoreApi, BroadcastFromEveryRoot) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  for (int root = 0; root < n; ++root) {
    runRanks(comms, [&](int rank, Communicator& c) {
      std::vector<int64_t> buf(37), src(37);
      for (size_t i = 0; i < buf.size(); ++i) src[i] = rank == root ? 1000 * root + i : -1;
      c.broadcast(Buffer(src.data(), src.size(), DataType::kInt64),
                  Buffer(buf.data(), buf.size(), DataType::kInt64), root).wait();
      for (size_t i = 0; i < buf.size(); ++i) {
        ASSERT_EQ(buf[i], static_cast<int64_t>(1000 * root + i)) << "rank " << rank << " root " << root << " index " << i;
      }
    });
  }
}

TEST_P(CoreApi, AllGatherContiguousInPlaceAndList) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  const size_t count = 5;
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<int32_t> in(count), out(count * n, -1), inplace(count * n, -1);
    for (size_t i = 0; i < count; ++i) in[i] = rank * 100 + static_cast<int>(i);
    c.allGather(Buffer(in.data(), count, DataType::kInt32),
                Buffer(out.data(), out.size(), DataType::kInt32)).wait();
    std::copy(in.begin(), in.end(), inplace.begin() + rank * count);
    c.allGather(Buffer(inplace.data() + rank * count, count, DataType::kInt32),
                Buffer(inplace.data(), inplace.size(), DataType::kInt32)).wait();
    std::vector<std::vector<int32_t>> lists(n, std::vector<int32_t>(count, -1));
    std::vector<Buffer> outs;
    for (auto& l : lists) outs.emplace_back(l.data(), count, DataType::kInt32);
    c.allGather(Buffer(in.data(), count, DataType::kInt32), outs).wait();
    for (int r = 0; r < n; ++r) {
      for (size_t i = 0; i < count; ++i) {
        const int32_t expect = r * 100 + static_cast<int>(i);
        ASSERT_EQ(out[r * count + i], expect) << "rank " << rank << " block " << r << " index " << i;
        ASSERT_EQ(inplace[r * count + i], expect) << "in place: rank " << rank << " block " << r;
        ASSERT_EQ(lists[r][i], expect) << "list: rank " << rank << " block " << r;
      }
    }
  });
}

TEST_P(CoreApi, ReduceScatterOutOfPlaceInPlaceAndBlocking) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1000}}) {
    runRanks(comms, [&](int rank, Communicator& c) {
      const size_t total = count * static_cast<size_t>(n);
      std::vector<float> in(total), out(count, -1.f), blocking(count, -1.f);
      for (size_t j = 0; j < total; ++j) in[j] = value(rank, j);
      const Buffer send(in.data(), total, DataType::kFloat32);
      c.reduceScatter(send, Buffer(out.data(), count, DataType::kFloat32), ReduceOp::kMax).wait();
      c.reduceScatterBlocking(send, Buffer(blocking.data(), count, DataType::kFloat32),
                              ReduceOp::kSum);
      float* mine = in.data() + static_cast<size_t>(rank) * count;
      c.reduceScatter(send, Buffer(mine, count, DataType::kFloat32), ReduceOp::kSum).wait();
      for (size_t i = 0; i < count; ++i) {
        const size_t j = static_cast<size_t>(rank) * count + i;
        float sum = 0, max = value(0, j);
        for (int r = 0; r < n; ++r) {
          sum += value(r, j);
          max = std::max(max, value(r, j));
        }
        ASSERT_EQ(out[i], max) << "max: rank " << rank << " index " << i << " count " << count;
        ASSERT_EQ(blocking[i], sum) << "blocking sum: rank " << rank << " index " << i;
        ASSERT_EQ(mine[i], sum) << "in place: rank " << rank << " index " << i;
      }
    });
  }
}

TEST_P(CoreApi, ReduceToEveryRootInPlaceOutOfPlaceAndBlocking) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1000}}) {
    runRanks(comms, [&](int rank, Communicator& c) {
      for (int root = 0; root < n; ++root) {
        std::vector<float> in(count), out(count, -1.f), inplace(count);
        for (size_t i = 0; i < count; ++i) in[i] = inplace[i] = value(rank, i);
        const Buffer send(in.data(), count, DataType::kFloat32);
        c.reduce(send, Buffer(out.data(), count, DataType::kFloat32), ReduceOp::kSum, root).wait();
        const Buffer both(inplace.data(), count, DataType::kFloat32);
        c.reduceBlocking(both, both, ReduceOp::kMin, root);
        for (size_t i = 0; i < count; ++i) {
          float sum = 0, min = value(0, i);
          for (int r = 0; r < n; ++r) {
            sum += value(r, i);
            min = std::min(min, value(r, i));
          }
          const bool isRoot = rank == root;
          ASSERT_EQ(out[i], isRoot ? sum : -1.f)
              << "rank " << rank << " root " << root << " i " << i;
          ASSERT_EQ(inplace[i], isRoot ? min : value(rank, i)) << "in place: rank " << rank;
          ASSERT_EQ(in[i], value(rank, i)) << "send modified: rank " << rank;
        }
      }
    });
  }
}

TEST_P(CoreApi, GatherAndScatterToEveryRoot) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  const size_t count = 6;
  const auto I = DataType::kInt32;
  runRanks(comms, [&](int rank, Communicator& c) {
    for (int root = 0; root < n; ++root) {
      std::vector<int32_t> mine(count), all(count * n, -1);
      for (size_t i = 0; i < count; ++i) mine[i] = rank * 100 + static_cast<int>(i);
      c.gather(Buffer(mine.data(), count, I), Buffer(all.data(), all.size(), I), root).wait();
      std::vector<int32_t> source(count * n, -1), part(count, -1);
      if (rank == root) {
        for (size_t j = 0; j < source.size(); ++j) source[j] = root * 1000 + static_cast<int>(j);
      }
      c.scatterBlocking(Buffer(source.data(), source.size(), I), Buffer(part.data(), count, I),
                        root);
      for (size_t j = 0; j < all.size(); ++j) {
        const int32_t want =
            rank == root ? static_cast<int32_t>(j / count) * 100 + static_cast<int32_t>(j % count)
                         : -1;
        ASSERT_EQ(all[j], want) << "gather: rank " << rank << " root " << root << " index " << j;
      }
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(part[i], root * 1000 + static_cast<int>(rank * count + i))
            << "scatter: rank " << rank << " root " << root << " index " << i;
      }
    }
  });
}

// The list forms: the root's outputs (gather) and inputs (scatter) as one buffer per rank, laid
// out in reverse rank order in memory, the root's own entry in place every other root.
TEST_P(CoreApi, GatherAndScatterListsToEveryRoot) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  const size_t count = 5;
  const auto I = DataType::kInt64;
  runRanks(comms, [&](int rank, Communicator& c) {
    for (int root = 0; root < n; ++root) {
      const bool inPlace = root % 2 == 1 && rank == root;
      std::vector<int64_t> store(count * n, -1), mine(count);
      std::vector<Buffer> list;
      for (int r = 0; r < n; ++r) {
        list.emplace_back(store.data() + (n - 1 - r) * count, count, I);
      }
      for (size_t i = 0; i < count; ++i) mine[i] = rank * 100 + static_cast<int64_t>(i);
      Buffer send = inPlace ? list[static_cast<size_t>(root)] : Buffer(mine.data(), count, I);
      if (inPlace) std::copy(mine.begin(), mine.end(), static_cast<int64_t*>(send.data));
      if (rank % 2 == 0) {
        c.gather(send, list, root).wait();
      } else {
        c.gatherBlocking(send, rank == root ? list : std::vector<Buffer>{}, root);
      }
      for (int r = 0; r < n && rank == root; ++r) {
        const auto* got = static_cast<const int64_t*>(list[static_cast<size_t>(r)].data);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(got[i], r * 100 + static_cast<int64_t>(i))
              << "gather list: rank " << rank << " root " << root << " from " << r;
        }
      }
      if (rank != root) {
        for (int64_t v : store) ASSERT_EQ(v, -1) << "a non-root's list was written";
      }
      // scatter: the root's entry r holds root * 1000 + r * 10 + i.
      for (int r = 0; r < n; ++r) {
        auto* in = static_cast<int64_t*>(list[static_cast<size_t>(r)].data);
        for (size_t i = 0; i < count; ++i) in[i] = root * 1000 + r * 10 + static_cast<int64_t>(i);
      }
      std::vector<int64_t> part(count, -1);
      Buffer recv = inPlace ? list[static_cast<size_t>(root)] : Buffer(part.data(), count, I);
      if (rank % 2 == 0) {
        c.scatterBlocking(list, recv, root);
      } else {
        c.scatter(rank == root ? list : std::vector<Buffer>{}, recv, root).wait();
      }
      const auto* got = static_cast<const int64_t*>(recv.data);
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(got[i], root * 1000 + rank * 10 + static_cast<int64_t>(i))
            << "scatter list: rank " << rank << " root " << root;
      }
    }
  });
}

TEST_P(CoreApi, AllToAllEqualAndUnevenPostedAndBlocking) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  const auto I = DataType::kInt32;
  auto value = [](int from, int to, size_t i) {
    return from * 1000 + to * 10 + static_cast<int>(i);
  };
  runRanks(comms, [&](int rank, Communicator& c) {
    for (size_t per : {size_t{0}, size_t{1}, size_t{5}}) {
      std::vector<int32_t> in(per * n), out(per * n, -1);
      for (size_t j = 0; j < in.size(); ++j)
        in[j] = value(rank, static_cast<int>(j / per), j % per);
      c.allToAll(Buffer(in.data(), in.size(), I), Buffer(out.data(), out.size(), I)).wait();
      for (size_t j = 0; j < out.size(); ++j) {
        ASSERT_EQ(out[j], value(static_cast<int>(j / per), rank, j % per))
            << "all_to_all: rank " << rank << " per " << per << " index " << j;
      }
    }
    // Uneven: rank f sends (f + t) % 3 elements to rank t, zeros included; one list of pieces.
    std::vector<std::vector<int32_t>> ins(n), outs(n);
    std::vector<Buffer> sends, recvs;
    for (int q = 0; q < n; ++q) {
      ins[q].resize(static_cast<size_t>((rank + q) % 3));
      for (size_t i = 0; i < ins[q].size(); ++i) ins[q][i] = value(rank, q, i);
      outs[q].assign(static_cast<size_t>((q + rank) % 3), -1);
      sends.emplace_back(ins[q].data(), ins[q].size(), I);
      recvs.emplace_back(outs[q].data(), outs[q].size(), I);
    }
    c.allToAllVBlocking(sends, recvs);
    for (int q = 0; q < n; ++q) {
      for (size_t i = 0; i < outs[q].size(); ++i) {
        ASSERT_EQ(outs[q][i], value(q, rank, i)) << "all_to_allv: rank " << rank << " from " << q;
      }
    }
  });
}

TEST_P(CoreApi, ZeroCountAndBarrier) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    float x = 1.f;
    c.allReduce(Buffer(&x, 0, DataType::kFloat32), Buffer(&x, 0, DataType::kFloat32), ReduceOp::kSum).wait();
    c.broadcast(Buffer(nullptr, 0, DataType::kFloat32), Buffer(nullptr, 0, DataType::kFloat32), 0).wait();
    c.barrier().wait();
    ASSERT_EQ(x, 1.f);
  });
}

TEST_P(CoreApi, AsyncRequestsCompleteInOrderWithCallbacks) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    constexpr int kOps = 40;
    std::vector<std::vector<double>> bufs(kOps, std::vector<double>(9));
    std::vector<Request> reqs;
    std::atomic<int> callbacks{0};
    for (int k = 0; k < kOps; ++k) {
      for (auto& v : bufs[k]) v = rank + k;
      reqs.push_back(c.allReduce(Buffer(bufs[k].data(), 9, DataType::kFloat64),
                                 Buffer(bufs[k].data(), 9, DataType::kFloat64), ReduceOp::kMax));
      reqs.back().onComplete([&] { callbacks.fetch_add(1); });
    }
    for (int k = kOps - 1; k >= 0; --k) reqs[k].wait();
    for (int k = 0; k < kOps; ++k) {
      ASSERT_TRUE(reqs[k].test());
      ASSERT_EQ(reqs[k].sequence(), static_cast<uint64_t>(k));
      for (double v : bufs[k]) ASSERT_EQ(v, n - 1 + k) << "rank " << rank << " op " << k;
    }
    ASSERT_EQ(callbacks.load(), kOps);
  });
}

// After a stretch of synchronous collectives (callers drive; the engine thread backs off its
// polls) a collective nobody waits for must still be run by the engine thread. Bounded: polls
// completed() for at most 5 s.
TEST_P(CoreApi, AsyncCollectiveProgressesWithoutAWaiterAfterSynchronousOnes) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<float> sync(5);
    for (int k = 0; k < 500; ++k) {
      c.allReduce(Buffer(sync.data(), sync.size(), DataType::kFloat32),
                  Buffer(sync.data(), sync.size(), DataType::kFloat32), ReduceOp::kSum)
          .wait();
    }
    std::vector<float> async(7);
    for (size_t i = 0; i < async.size(); ++i) async[i] = value(rank, i);
    Request r = c.allReduce(Buffer(async.data(), async.size(), DataType::kFloat32),
                            Buffer(async.data(), async.size(), DataType::kFloat32), ReduceOp::kSum);
    ASSERT_EQ(r.error(), nullptr) << "no outcome before completion";
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!r.completed() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ASSERT_TRUE(r.completed()) << "rank " << rank << ": nobody ran the asynchronous collective";
    ASSERT_TRUE(r.test());
    for (size_t i = 0; i < async.size(); ++i) {
      float expected = 0;
      for (int q = 0; q < n; ++q) expected += value(q, i);
      ASSERT_EQ(async[i], expected) << "rank " << rank << " element " << i;
    }
  });
}

// Two threads wait on each request at once (the handle copied), racing for the lock-free claim
// of the synchronous path: every collective runs exactly once (an in-place SUM run twice would
// come out n times too large) and both waits return.
TEST_P(CoreApi, TwoWaitersOnOneRequestRunItOnce) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    constexpr int kRounds = 200;
    std::vector<float> buf(3);
    for (int k = 0; k < kRounds; ++k) {
      for (auto& v : buf) v = static_cast<float>(rank + k);
      Request r = c.allReduce(Buffer(buf.data(), buf.size(), DataType::kFloat32),
                              Buffer(buf.data(), buf.size(), DataType::kFloat32), ReduceOp::kSum);
      Request copy = r;
      runOnThreads({[&] { r.wait(); }, [&] { copy.wait(); }});
      const float expected = static_cast<float>(n * (n - 1) / 2 + n * k);
      for (float v : buf) ASSERT_EQ(v, expected) << "rank " << rank << " round " << k;
    }
  });
}

// Three threads wait on the same outstanding requests in different orders while the engine thread
// may run them too: each runs once, in issue order, and every wait returns.
TEST_P(CoreApi, WaitersOnSeveralThreadsInAnyOrder) {
  const int n = GetParam();
  auto comms = makeLoopbackGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    constexpr int kOps = 60;
    std::vector<std::vector<float>> bufs(kOps, std::vector<float>(5));
    std::vector<Request> reqs;
    for (int k = 0; k < kOps; ++k) {
      for (auto& v : bufs[k]) v = static_cast<float>(rank * k);
      reqs.push_back(c.allReduce(Buffer(bufs[k].data(), 5, DataType::kFloat32),
                                 Buffer(bufs[k].data(), 5, DataType::kFloat32), ReduceOp::kSum));
    }
    // wait() reads its handle only, so the threads share the handles.
    const auto waitAll = [&reqs](int first, int step) {
      for (int i = 0; i < kOps; ++i) reqs[static_cast<size_t>((first + i * step) % kOps)].wait();
    };
    runOnThreads({[&] { waitAll(0, 1); },
                  [&] { waitAll(kOps - 1, kOps - 1); },  // kOps-1, kOps-2, ... (mod kOps)
                  [&] { waitAll(0, 7); }});              // 7 and kOps are coprime
    for (int k = 0; k < kOps; ++k) {
      ASSERT_TRUE(reqs[static_cast<size_t>(k)].test());
      ASSERT_EQ(reqs[static_cast<size_t>(k)].sequence(), static_cast<uint64_t>(k));
      const float expected = static_cast<float>(k * n * (n - 1) / 2);
      for (float v : bufs[k]) ASSERT_EQ(v, expected) << "rank " << rank << " op " << k;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CoreApi, ::testing::Values(1, 2, 3, 5, 7, 8));

TEST(CoreSettings, SpinIsOffOnlyWhenRanksOutnumberCores) {
  EXPECT_EQ(core::spinForHost(2, 2), 20);
  EXPECT_EQ(core::spinForHost(1, 64), 20);
  EXPECT_EQ(core::spinForHost(3, 2), 0);
  EXPECT_EQ(core::spinForHost(16, 8), 0);
  EXPECT_EQ(core::spinForHost(4, 0), 20) << "unknown core count: keep the default";
}

}  // namespace
}  // namespace smddp
