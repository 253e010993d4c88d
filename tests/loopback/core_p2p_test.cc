// SPDX-License-Identifier: Apache-2.0
// send and recv through the public API over the loopback transport, each test on both paths:
// messages through the transport only (kFabric), and through a shared arena's mailboxes with
// letters of kLetter bytes, larger messages carried by the transport (kMail). A ring exchange over
// worlds 2..7 (every dtype, zero and odd counts, receives posted before and after the sends),
// order per (peer, tag) also across letters and carried messages, any-source receives, sends and
// receives mixed with collectives in either order on the two sides, senders that fill a mailbox
// before the receiver posts anything, and the errors: sizes that differ (both ways), a timeout
// naming the peer and tag, bad arguments, abort. Values are closed forms of (sender, receiver,
// index).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "loopback_group.h"
#include "smddp/error.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using testing::expectError;
using testing::makeLoopbackGroup;
using testing::runRanks;

constexpr DataType kTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                               DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                               DataType::kInt32,    DataType::kInt64};

int32_t value(int from, int to, size_t i) {
  return static_cast<int32_t>(from * 1000 + to * 100 + static_cast<int>(i % 97));
}

constexpr size_t kFabric = 0;    // no mailboxes
constexpr size_t kLetter = 256;  // mailboxes with letters of 256 bytes

std::string pathName(size_t mail) { return mail == kFabric ? "Fabric" : "Mail"; }

class CoreP2p : public ::testing::TestWithParam<std::tuple<int, size_t>> {
 protected:
  int ranks() const { return std::get<0>(GetParam()); }
  std::vector<std::unique_ptr<Communicator>> group(const Options& options = Options()) const {
    return makeLoopbackGroup(ranks(), options, nullptr, std::get<1>(GetParam()));
  }
};

TEST_P(CoreP2p, RingExchangeEveryDtypeAndCountBothPostOrders) {
  const int n = ranks();
  auto comms = group();
  runRanks(comms, [&](int rank, Communicator& c) {
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{100003}}) {
      for (DataType dt : kTypes) {
        const size_t es = dataTypeSize(dt);
        // Raw bytes of (sender, receiver, index): a message moves bytes, whatever the dtype.
        std::vector<unsigned char> out(count * es), in(count * es, 0xEE);
        for (size_t i = 0; i < out.size(); ++i)
          out[i] = static_cast<unsigned char>(value(rank, next, i));
        const bool recvFirst = (count + static_cast<size_t>(rank)) % 2 == 0;
        Request r = recvFirst ? c.recv(Buffer(in.data(), count, dt), prev, 3) : Request(nullptr);
        Request s = c.send(Buffer(out.data(), count, dt), next, 3);
        if (!recvFirst) r = c.recv(Buffer(in.data(), count, dt), prev, 3);
        s.wait();
        r.wait();
        EXPECT_EQ(r.source(), prev);
        for (size_t i = 0; i < in.size(); ++i) {
          ASSERT_EQ(in[i], static_cast<unsigned char>(value(prev, rank, i)))
              << "rank " << rank << " count " << count << " " << toString(dt) << " byte " << i;
        }
      }
    }
  });
}

TEST_P(CoreP2p, AnySourceReceivesEveryOtherRankAndNamesIt) {
  const int n = ranks();
  auto comms = group();
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt32;
    if (rank == 0) {
      std::set<int> seen;
      for (int k = 1; k < n; ++k) {
        std::vector<int32_t> got(5, -1);
        Request r = c.recv(Buffer(got.data(), 5, I), Communicator::kAnySource, 11);
        r.wait();
        ASSERT_GE(r.source(), 1);
        ASSERT_LT(r.source(), n);
        EXPECT_TRUE(seen.insert(r.source()).second) << "source " << r.source() << " twice";
        for (size_t i = 0; i < 5; ++i) ASSERT_EQ(got[i], value(r.source(), 0, i));
      }
      // Then one more from each (tag 12), received by name in reverse rank order: a directed
      // receive takes its sender's message although the others' are there first.
      for (int k = n - 1; k >= 1; --k) {
        std::vector<int32_t> got(5, -1);
        Request r = c.recv(Buffer(got.data(), 5, I), k, 12);
        r.wait();
        EXPECT_EQ(r.source(), k);
        for (size_t i = 0; i < 5; ++i) ASSERT_EQ(got[i], value(k, 0, i + 1)) << "from " << k;
      }
    } else {
      std::vector<int32_t> mine(5), second(5);
      for (size_t i = 0; i < 5; ++i) mine[i] = value(rank, 0, i);
      for (size_t i = 0; i < 5; ++i) second[i] = value(rank, 0, i + 1);
      c.send(Buffer(mine.data(), 5, I), 0, 11).wait();
      c.send(Buffer(second.data(), 5, I), 0, 12).wait();
    }
  });
}

// Letters and carried messages of one pair and tag, interleaved, sizes of every kind in turn:
// each receive gets its own message (order holds across the two routes), any source included.
TEST_P(CoreP2p, LettersAndCarriedMessagesKeepTheirOrder) {
  const int n = ranks();
  auto comms = group();
  const size_t sizes[] = {0, 1, kLetter / 8, kLetter / 8 + 1, 5000, 2};  // int64 elements
  constexpr int kRounds = 3;
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt64;
    if (rank == 0) {
      for (int from = 1; from < n; ++from) {
        for (int k = 0; k < kRounds * 6; ++k) {
          const size_t count = sizes[k % 6];
          std::vector<int64_t> got(count, -1);
          // Every other receive takes any source: the tag is the sender's own.
          const int peer = k % 2 == 0 ? from : Communicator::kAnySource;
          Request r = c.recv(Buffer(got.data(), count, I), peer, static_cast<uint32_t>(from));
          r.wait();
          ASSERT_EQ(r.source(), from);
          for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(got[i], 100000 * from + 1000 * k + static_cast<int64_t>(i))
                << "message " << k << " from " << from << " element " << i;
          }
        }
      }
      return;
    }
    std::vector<std::vector<int64_t>> out;
    std::vector<Request> sends;
    for (int k = 0; k < kRounds * 6; ++k) {
      auto& v = out.emplace_back(sizes[k % 6]);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = 100000 * rank + 1000 * k + static_cast<int64_t>(i);
    }
    for (auto& v : out) {
      sends.push_back(c.send(Buffer(v.data(), v.size(), I), 0, static_cast<uint32_t>(rank)));
    }
    for (auto& r : sends) r.wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, CoreP2p,
                         ::testing::Combine(::testing::Values(2, 3, 5, 7),
                                            ::testing::Values(kFabric, kLetter)),
                         [](const auto& info) {
                           return std::to_string(std::get<0>(info.param)) + "ranks" +
                                  pathName(std::get<1>(info.param));
                         });

class CoreP2pPath : public ::testing::TestWithParam<size_t> {
 protected:
  std::vector<std::unique_ptr<Communicator>> group(int n,
                                                   const Options& options = Options()) const {
    return makeLoopbackGroup(n, options, nullptr, GetParam());
  }
  bool mail() const { return GetParam() != kFabric; }
};

TEST_P(CoreP2pPath, MessagesOfOnePairAndTagMatchInPostOrder) {
  auto comms = group(2);
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt64;
    constexpr int kEach = 20;
    if (rank == 0) {  // tags 7 and 9 interleaved, each numbered in order
      std::vector<int64_t> values(2 * kEach);
      std::vector<Request> sends;
      for (int k = 0; k < kEach; ++k) {
        values[2 * k] = 700 + k;
        values[2 * k + 1] = 900 + k;
        sends.push_back(c.send(Buffer(&values[2 * k], 1, I), 1, 7));
        sends.push_back(c.send(Buffer(&values[2 * k + 1], 1, I), 1, 9));
      }
      for (auto& s : sends) s.wait();
    } else {  // all of tag 9 first, then tag 7: each tag still in order
      std::vector<int64_t> got(2 * kEach, -1);
      std::vector<Request> recvs;
      for (int k = 0; k < kEach; ++k) recvs.push_back(c.recv(Buffer(&got[k], 1, I), 0, 9));
      for (int k = 0; k < kEach; ++k) recvs.push_back(c.recv(Buffer(&got[kEach + k], 1, I), 0, 7));
      for (auto& r : recvs) r.wait();
      for (int k = 0; k < kEach; ++k) {
        EXPECT_EQ(got[k], 900 + k) << k;
        EXPECT_EQ(got[kEach + k], 700 + k) << k;
      }
    }
  });
}

TEST_P(CoreP2pPath, SendRecvDoNotWaitBehindCollectives) {
  // Rank 0 posts an all_reduce, then sends; rank 1 receives first, then joins the all_reduce:
  // in the engine's issue order the send would wait for an all_reduce that waits for it.
  auto comms = group(2);
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto F = DataType::kFloat32;
    std::vector<float> a(1000, static_cast<float>(rank + 1)), m(1000, 0.f);
    if (rank == 0) {
      Request ar =
          c.allReduce(Buffer(a.data(), a.size(), F), Buffer(a.data(), a.size(), F), ReduceOp::kSum);
      for (auto& v : m) v = 42.f;
      c.send(Buffer(m.data(), m.size(), F), 1).wait();
      ar.wait();
    } else {
      c.recv(Buffer(m.data(), m.size(), F), 0).wait();
      c.allReduce(Buffer(a.data(), a.size(), F), Buffer(a.data(), a.size(), F), ReduceOp::kSum)
          .wait();
      for (float v : m) ASSERT_EQ(v, 42.f);
    }
    for (float v : a) ASSERT_EQ(v, 3.f);
  });
}

// Rank 0 sends more small messages, each waited for, than a mailbox holds, then joins an
// all_reduce; rank 1 joins the all_reduce first and receives afterwards. The sends must not wait
// for receives that come only after the all_reduce (rank 1 drains its mailbox meanwhile).
TEST_P(CoreP2pPath, SendsCompleteBeforeTheReceiverPostsAnything) {
  if (!mail()) GTEST_SKIP() << "the loopback transport completes a send once it is received";
  Options opts;
  opts.timeout = 10s;
  auto comms = group(2, opts);
  constexpr int kMessages = 30;
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt32;
    int32_t x = rank + 1;
    if (rank == 0) {
      for (int32_t k = 0; k < kMessages; ++k) c.send(Buffer(&k, 1, I), 1, 6).wait();
      c.allReduce(Buffer(&x, 1, I), Buffer(&x, 1, I), ReduceOp::kSum).wait();
    } else {
      std::this_thread::sleep_for(50ms);
      c.allReduce(Buffer(&x, 1, I), Buffer(&x, 1, I), ReduceOp::kSum).wait();
      for (int32_t k = 0; k < kMessages; ++k) {
        int32_t got = -1;
        c.recv(Buffer(&got, 1, I), 0, 6).wait();
        ASSERT_EQ(got, k);
      }
    }
    EXPECT_EQ(x, 3);
  });
}

// A receive that timed out leaves the communicator usable: the message sent late goes whole to
// the next receive of its pair and tag (a large one: carried, with mailboxes).
TEST_P(CoreP2pPath, ATimedOutReceiveLeavesTheLateMessageToTheNextReceive) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = group(2, opts);
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt32;
    for (size_t count : {size_t{3}, size_t{1000}}) {
      std::vector<int32_t> buf(count, -1);
      if (rank == 1) {
        expectError([&] { c.recv(Buffer(buf.data(), count, I), 0, 8).wait(); },
                    ErrorCode::kTimeout);
        c.recv(Buffer(buf.data(), count, I), 0, 8).wait();
        for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[i], 5 * static_cast<int32_t>(i));
      } else {
        std::this_thread::sleep_for(400ms);  // after rank 1's first receive timed out
        for (size_t i = 0; i < count; ++i) buf[i] = 5 * static_cast<int32_t>(i);
        c.send(Buffer(buf.data(), count, I), 1, 8).wait();
      }
    }
  });
}

TEST_P(CoreP2pPath, SizesThatDifferFailTheReceiveNamingBothRanks) {
  auto comms = group(2);
  runRanks(comms, [&](int rank, Communicator& c) {
    const auto I = DataType::kInt32;
    std::vector<int32_t> buf(16, rank);
    if (rank == 0) {
      c.send(Buffer(buf.data(), 8, I), 1, 1).wait();  // shorter than the receive
      try {  // longer than the receive: the loopback transport fails the send too
        c.send(Buffer(buf.data(), 16, I), 1, 2).wait();
      } catch (const Error&) {
      }
      return;
    }
    std::string msg =
        expectError([&] { c.recv(Buffer(buf.data(), 10, I), 0, 1).wait(); }, ErrorCode::kMismatch);
    EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv #0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rank 0 (loopback) sent 32 bytes where this receive expects 40"),
              std::string::npos)
        << msg;
    msg =
        expectError([&] { c.recv(Buffer(buf.data(), 10, I), 0, 2).wait(); }, ErrorCode::kMismatch);
    EXPECT_NE(msg.find(mail() ? "sent 64 bytes where this receive expects 40"
                              : "larger than this receive (40 bytes)"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("tag 2"), std::string::npos) << msg;
    if (mail()) {
      EXPECT_EQ(buf[0], 1) << "a letter of another size was copied";
    }
  });
}

TEST_P(CoreP2pPath, AnUnmatchedReceiveTimesOutNamingPeerAndTag) {
  Options opts;
  opts.timeout = 300ms;
  auto comms = group(3, opts);
  runRanks(comms, [&](int rank, Communicator& c) {
    if (rank != 2) return;
    float x = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string msg = expectError(
        [&] { c.recv(Buffer(&x, 1, DataType::kFloat32), 1, 5).wait(); }, ErrorCode::kTimeout);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
    EXPECT_NE(msg.find("rank 2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("recv #0 (float32 x 1 = 4 B) from rank 1 (loopback), tag 5"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("Timed out after 300 ms"), std::string::npos) << msg;
    // The communicator still works for what follows.
    EXPECT_TRUE(c.brokenReason().empty());
  });
}

TEST_P(CoreP2pPath, BadArgumentsAndAbort) {
  auto comms = group(3);
  runRanks(comms, [&](int rank, Communicator& c) {
    float x = 0;
    const auto F = DataType::kFloat32;
    std::string msg =
        expectError([&] { c.send(Buffer(&x, 1, F), 3); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("send: peer 3 is out of range [0, 3)"), std::string::npos) << msg;
    msg = expectError([&] { c.send(Buffer(&x, 1, F), rank); }, ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("is this rank"), std::string::npos) << msg;
    msg = expectError([&] { c.recv(Buffer(nullptr, 4, F), (rank + 1) % 3); },
                      ErrorCode::kInvalidArgument);
    EXPECT_NE(msg.find("recv: recv is a null pointer"), std::string::npos) << msg;
    // A receive nobody answers ends at abort(); later posts are refused.
    Request r = c.recv(Buffer(&x, 1, F), Communicator::kAnySource, 99);
    std::thread aborter([&c] {
      std::this_thread::sleep_for(50ms);
      c.abort();
    });
    msg = expectError([&] { r.wait(); }, ErrorCode::kAborted);
    aborter.join();
    EXPECT_NE(msg.find("from any rank, tag 99: aborted"), std::string::npos) << msg;
    expectError([&] { c.send(Buffer(&x, 1, F), (rank + 1) % 3); }, ErrorCode::kAborted);
  });
}

TEST_P(CoreP2pPath, CallbacksAndShortWaits) {
  auto comms = group(2);
  runRanks(comms, [&](int rank, Communicator& c) {
    int32_t v = rank == 0 ? 77 : -1;
    if (rank == 1) {
      std::atomic<int> calls{0};
      Request r = c.recv(Buffer(&v, 1, DataType::kInt32), 0);
      r.onComplete([&calls] { calls.fetch_add(1); });
      expectError([&] { r.wait(50ms); }, ErrorCode::kTimeout);  // rank 0 sends late
      r.wait();
      EXPECT_EQ(v, 77);
      EXPECT_EQ(calls.load(), 1);
      EXPECT_TRUE(r.test());
      EXPECT_EQ(r.sequence(), 0u);
    } else {
      std::this_thread::sleep_for(200ms);
      c.send(Buffer(&v, 1, DataType::kInt32), 1).wait();
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Paths, CoreP2pPath, ::testing::Values(kFabric, kLetter),
                         [](const auto& info) { return pathName(info.param); });

}  // namespace
}  // namespace smddp
