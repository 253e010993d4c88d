// SPDX-License-Identifier: Apache-2.0
// The blocking forms of the public API (Communicator::*Blocking) over the loopback transport:
// closed-form results for every collective, dtype and op over several world sizes and counts (odd
// and zero), in order with posted requests around them, and errors thrown to the caller as a
// request's wait() would throw them.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "loopback_group.h"
#include "reduce/convert.h"
#include "smddp/error.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using testing::expectError;
using testing::makeLoopbackGroup;
using testing::runRanks;

// Small integers: exact in every dtype below, also their sums and products over 7 ranks.
double value(int rank, size_t i) { return static_cast<double>((rank + i) % 3 + 1); }

template <class T>
std::vector<T> filled(int rank, size_t count) {
  std::vector<T> v(count);
  for (size_t i = 0; i < count; ++i) v[i] = static_cast<T>(value(rank, i));
  return v;
}

double reduced(ReduceOp op, int n, size_t i) {
  double acc = value(0, i);
  for (int r = 1; r < n; ++r) {
    const double x = value(r, i);
    switch (op) {
      case ReduceOp::kSum: case ReduceOp::kAvg: acc += x; break;
      case ReduceOp::kProd: acc *= x; break;
      case ReduceOp::kMin: acc = std::min(acc, x); break;
      case ReduceOp::kMax: acc = std::max(acc, x); break;
      default: ADD_FAILURE() << "not covered here: " << toString(op); break;
    }
  }
  return op == ReduceOp::kAvg ? acc / n : acc;
}

// Element codecs: the stored form of a value and back (16-bit floats through reduce/convert.h).
template <class T>
struct Plain {
  using Stored = T;
  static Stored encode(double v) { return static_cast<T>(v); }
  static double decode(Stored v) { return static_cast<double>(v); }
};
struct Half {
  using Stored = uint16_t;
  static Stored encode(double v) { return reduce::floatToHalf(static_cast<float>(v)); }
  static double decode(Stored v) { return reduce::halfToFloat(v); }
};
struct BFloat {
  using Stored = uint16_t;
  static Stored encode(double v) { return reduce::floatToBf16(static_cast<float>(v)); }
  static double decode(Stored v) { return reduce::bf16ToFloat(v); }
};

template <class Codec>
void checkAllReduce(Communicator& c, int rank, int n, DataType dtype, ReduceOp op, size_t count) {
  using S = typename Codec::Stored;
  std::vector<S> in(count), out(count, Codec::encode(99));
  for (size_t i = 0; i < count; ++i) in[i] = Codec::encode(value(rank, i));
  std::vector<S> inplace = in;
  c.allReduceBlocking(Buffer(in.data(), count, dtype), Buffer(out.data(), count, dtype), op);
  c.allReduceBlocking(Buffer(inplace.data(), count, dtype), Buffer(inplace.data(), count, dtype),
                      op);
  for (size_t i = 0; i < count; ++i) {
    const double want = Codec::decode(Codec::encode(reduced(op, n, i)));  // as the dtype holds it
    ASSERT_EQ(Codec::decode(out[i]), want) << "rank " << rank << " " << toString(dtype) << " "
                                           << toString(op) << " count " << count << " index " << i;
    ASSERT_EQ(Codec::decode(inplace[i]), want) << "in place: rank " << rank << " index " << i;
  }
}

// A collective that fails in a loopback group names its rank and ends the test in seconds, not
// after the default 300 s timeout.
std::vector<std::unique_ptr<Communicator>> makeGroup(int n) {
  Options opts;
  opts.timeout = 10s;
  return makeLoopbackGroup(n, opts);
}

class CoreBlocking : public ::testing::TestWithParam<int> {};

// Products of up to 7 values in 1..3 fit every type of 32 bits or more exactly; the 8- and 16-bit
// types take the ops whose results stay small (sums up to 21, avg).
TEST_P(CoreBlocking, AllReduceEveryDtypeAndOp) {
  const int n = GetParam();
  auto comms = makeGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    const uint64_t before = c.impl().inlineRuns();
    int calls = 0;
    for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1001}}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
        checkAllReduce<Plain<float>>(c, rank, n, DataType::kFloat32, op, count);
        checkAllReduce<Plain<double>>(c, rank, n, DataType::kFloat64, op, count);
        checkAllReduce<Plain<int32_t>>(c, rank, n, DataType::kInt32, op, count);
        checkAllReduce<Plain<int64_t>>(c, rank, n, DataType::kInt64, op, count);
        calls += 8;
        if (op == ReduceOp::kProd) continue;
        checkAllReduce<Half>(c, rank, n, DataType::kFloat16, op, count);
        checkAllReduce<BFloat>(c, rank, n, DataType::kBFloat16, op, count);
        checkAllReduce<Plain<int8_t>>(c, rank, n, DataType::kInt8, op, count);
        checkAllReduce<Plain<uint8_t>>(c, rank, n, DataType::kUInt8, op, count);
        calls += 8;
      }
      checkAllReduce<Plain<float>>(c, rank, n, DataType::kFloat32, ReduceOp::kAvg, count);
      checkAllReduce<Plain<double>>(c, rank, n, DataType::kFloat64, ReduceOp::kAvg, count);
      checkAllReduce<Half>(c, rank, n, DataType::kFloat16, ReduceOp::kAvg, count);
      checkAllReduce<BFloat>(c, rank, n, DataType::kBFloat16, ReduceOp::kAvg, count);
      calls += 8;
    }
    // Nothing else was queued: every call ran on this thread, without a request.
    EXPECT_EQ(c.impl().inlineRuns() - before, static_cast<uint64_t>(calls)) << "rank " << rank;
  });
}

TEST_P(CoreBlocking, BroadcastAllGatherAndBarrier) {
  const int n = GetParam();
  auto comms = makeGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{999}}) {
      for (int root = 0; root < n; ++root) {
        std::vector<int64_t> buf(count, -1);
        if (rank == root) buf = filled<int64_t>(root, count);
        c.broadcastBlocking(Buffer(buf.data(), count, DataType::kInt64),
                            Buffer(buf.data(), count, DataType::kInt64), root);
        for (size_t i = 0; i < count; ++i) {
          ASSERT_EQ(buf[i], static_cast<int64_t>(value(root, i)))
              << "rank " << rank << " root " << root << " index " << i;
        }
      }
      const std::vector<float> in = filled<float>(rank, count);
      std::vector<float> out(count * n, -1.f);
      c.allGatherBlocking(Buffer(in.data(), count, DataType::kFloat32),
                          Buffer(out.data(), out.size(), DataType::kFloat32));
      std::vector<std::vector<float>> lists(n, std::vector<float>(count, -1.f));
      std::vector<Buffer> outs;
      for (auto& l : lists) outs.emplace_back(l.data(), count, DataType::kFloat32);
      c.allGatherBlocking(Buffer(in.data(), count, DataType::kFloat32), outs);
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < count; ++i) {
          const auto want = static_cast<float>(value(r, i));
          ASSERT_EQ(out[r * count + i], want)
              << "rank " << rank << " block " << r << " index " << i;
          ASSERT_EQ(lists[r][i], want) << "list: rank " << rank << " block " << r;
        }
      }
      c.barrierBlocking();
    }
  });
}

// Posted requests nobody has waited for yet are ahead of a blocking call: it queues behind them
// (or runs once the engine thread has run them), so every collective keeps its sequence number
// and its result, and the next posted one follows the blocking one's number.
TEST_P(CoreBlocking, BehindPostedRequestsInIssueOrder) {
  const int n = GetParam();
  auto comms = makeGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    constexpr int kPosted = 12;
    for (int round = 0; round < 20; ++round) {
      std::vector<std::vector<int32_t>> bufs(kPosted, std::vector<int32_t>(5, rank + 1));
      std::vector<Request> reqs;
      for (auto& b : bufs) {
        reqs.push_back(c.allReduce(Buffer(b.data(), b.size(), DataType::kInt32),
                                   Buffer(b.data(), b.size(), DataType::kInt32), ReduceOp::kSum));
      }
      std::vector<int32_t> mine(3, rank);
      c.allReduceBlocking(Buffer(mine.data(), 3, DataType::kInt32),
                          Buffer(mine.data(), 3, DataType::kInt32), ReduceOp::kMax);
      Request after = c.barrier();
      const uint64_t base = static_cast<uint64_t>(round) * (kPosted + 2);
      for (int k = 0; k < kPosted; ++k) {
        ASSERT_TRUE(reqs[k].completed()) << "a posted request ahead is not done";
        ASSERT_EQ(reqs[k].sequence(), base + k);
        for (int32_t v : bufs[k]) ASSERT_EQ(v, n * (n + 1) / 2) << "rank " << rank << " op " << k;
      }
      for (int32_t v : mine) ASSERT_EQ(v, n - 1);
      ASSERT_EQ(after.sequence(), base + kPosted + 1);
      after.wait();
    }
  });
}

// After a stretch of blocking calls and a pause (the engine thread has gone to sleep), a posted
// collective nobody waits for still runs. Bounded: polls completed() for at most 5 s.
TEST_P(CoreBlocking, PostedCollectiveProgressesAfterBlockingOnes) {
  const int n = GetParam();
  auto comms = makeGroup(n);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<float> sync(5, 1.f);
    for (int k = 0; k < 2000; ++k) {
      c.allReduceBlocking(Buffer(sync.data(), 5, DataType::kFloat32),
                          Buffer(sync.data(), 5, DataType::kFloat32), ReduceOp::kMax);
    }
    std::this_thread::sleep_for(30ms);  // past the engine thread's idle time: it sleeps now
    std::vector<float> async = filled<float>(rank, 7);
    Request r = c.allReduce(Buffer(async.data(), 7, DataType::kFloat32),
                            Buffer(async.data(), 7, DataType::kFloat32), ReduceOp::kSum);
    const auto until = std::chrono::steady_clock::now() + 5s;
    while (!r.completed() && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(200us);
    }
    ASSERT_TRUE(r.completed()) << "rank " << rank << ": nobody ran the posted collective";
    ASSERT_TRUE(r.test());
    for (size_t i = 0; i < async.size(); ++i) {
      ASSERT_EQ(async[i], static_cast<float>(reduced(ReduceOp::kSum, n, i))) << "rank " << rank;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CoreBlocking, ::testing::Values(1, 2, 3, 5, 7));

TEST(CoreBlockingErrors, BadArgumentsThrowAndLeaveTheCommunicatorUsable) {
  auto comms = makeGroup(3);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<float> a(8, 1.f), b(8, 0.f);
    const auto F = DataType::kFloat32;
    auto msg = expectError(
        [&] {
          c.allReduceBlocking(Buffer(a.data(), 8, F), Buffer(b.data(), 7, F), ReduceOp::kSum);
        },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("rank " + std::to_string(rank) + "/3"), std::string::npos) << msg;
    EXPECT_NE(msg.find("differ in size"), std::string::npos) << msg;
    msg = expectError(
        [&] { c.broadcastBlocking(Buffer(a.data(), 8, F), Buffer(a.data(), 8, F), 5); },
        ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("root 5 is out of range [0, 3)"), std::string::npos) << msg;
    c.allReduceBlocking(Buffer(a.data(), 8, F), Buffer(b.data(), 8, F), ReduceOp::kSum);
    for (float v : b) ASSERT_EQ(v, 3.f) << "rank " << rank;
    // Nothing was consumed by the rejected calls: the blocking one above was #0.
    EXPECT_EQ(c.barrier().sequence(), 1u);
    EXPECT_TRUE(c.brokenReason().empty());
  });
}

// An algorithm override that cannot run here fails when the call is described (under the
// engine's lock, busy flag taken): the error reaches the caller, no sequence number is used, the
// busy flag is given back, and other collectives still run.
TEST(CoreBlockingErrors, AnUnusableAlgorithmOverrideThrowsAndLeavesTheEngineFree) {
  Options opts;
  opts.timeout = 10s;
  opts.algorithms = "broadcast:shm";  // needs the shared-memory arena; loopback has none
  auto comms = makeLoopbackGroup(2, opts);
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<float> a(4, static_cast<float>(rank));
    const Buffer buf(a.data(), 4, DataType::kFloat32);
    const auto msg = expectError([&] { c.broadcastBlocking(buf, buf, 0); },
                                 ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("needs the shared-memory arena"), std::string::npos) << msg;
    c.allReduceBlocking(buf, buf, ReduceOp::kSum);
    for (float v : a) ASSERT_EQ(v, 1.f) << "rank " << rank;
    EXPECT_EQ(c.barrier().sequence(), 1u) << "the failed broadcast took no sequence number";
  });
}

TEST(CoreBlockingErrors, MissingRankTimesOutNamingItThenBrokenThenAborted) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = makeLoopbackGroup(3, opts);
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank == 2) return;  // never calls
    std::vector<float> a(64, 1.f);
    const auto F = DataType::kFloat32;
    const auto start = std::chrono::steady_clock::now();
    auto msg = expectError(
        [&] {
          c.allReduceBlocking(Buffer(a.data(), 64, F), Buffer(a.data(), 64, F), ReduceOp::kSum);
        },
        ErrorCode::kTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);
    EXPECT_NE(msg.find("all_reduce #0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Timed out after 300 ms"), std::string::npos) << msg;
    if (rank == 1) {
      EXPECT_NE(msg.find("rank 2"), std::string::npos) << msg;
    }
    msg = expectError([&] { c.barrierBlocking(); }, ErrorCode::kBroken);
    EXPECT_NE(msg.find("barrier #1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Timed out"), std::string::npos) << "names the first error: " << msg;
    c.abort();
    expectError([&] { c.barrierBlocking(); }, ErrorCode::kAborted);
  });
}

}  // namespace
}  // namespace smddp
