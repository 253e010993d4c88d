// SPDX-License-Identifier: Apache-2.0
// send and recv in separate processes over real libfabric (shm, tcp and net on 127.0.0.1), 3 ranks:
// a ring exchange from 0 bytes to 4 MiB (eager and rendezvous sizes) with the receives posted
// before and after the sends, any-source receives, messages that arrive before their receives (4
// ranks); and the faults: a peer killed while this rank waits in a recv from it (kPeerFailure
// naming it within seconds, although the collective timeout is 60 s), sizes that differ
// (kMismatch naming both ranks). forkRanks bounds every case.
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <string>
#include <vector>

#include "failure_helpers.h"
#include "fork_ranks.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using namespace failure;

uint8_t byteOf(int from, int to, size_t i) {
  return static_cast<uint8_t>(from * 50 + to * 7 + i % 31);
}

int ringExchange(Communicator& c, int rank) {
  const int n = c.size(), next = (rank + 1) % n, prev = (rank + n - 1) % n;
  const auto U = DataType::kUInt8;
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4093}, size_t{65536}, size_t{4} << 20}) {
    std::vector<uint8_t> out(bytes), in(bytes, 0xEE);
    for (size_t i = 0; i < bytes; ++i) out[i] = byteOf(rank, next, i);
    const bool recvFirst = (bytes + static_cast<size_t>(rank)) % 2 == 0;
    Request r = recvFirst ? c.recv(Buffer(in.data(), bytes, U), prev, 1) : Request(nullptr);
    Request s = c.send(Buffer(out.data(), bytes, U), next, 1);
    if (!recvFirst) r = c.recv(Buffer(in.data(), bytes, U), prev, 1);
    s.wait();
    r.wait();
    for (size_t i = 0; i < bytes; ++i) {
      if (in[i] != byteOf(prev, rank, i)) {
        std::fprintf(stderr, "rank %d: ring %zu bytes: byte %zu is %d, expected %d\n", rank, bytes,
                     i, in[i], byteOf(prev, rank, i));
        return 1;
      }
    }
  }
  // Any source: rank 0 takes one message from each other rank, in whatever order they come.
  int64_t v = rank;
  if (rank == 0) {
    int seen = 0;
    for (int k = 1; k < n; ++k) {
      Request r = c.recv(Buffer(&v, 1, DataType::kInt64), Communicator::kAnySource, 2);
      r.wait();
      if (v != r.source() || (seen & (1 << v)) != 0) {
        std::fprintf(stderr, "any source: got %lld from %d\n", static_cast<long long>(v),
                     r.source());
        return 2;
      }
      seen |= 1 << v;
    }
  } else {
    c.send(Buffer(&v, 1, DataType::kInt64), 0, 2).wait();
  }
  c.barrier().wait();
  return 0;
}

// Messages that arrive before their receives: each rank sends rank 0 two messages with tag 0,
// then a marker with tag 7; rank 0 takes the markers first (per-peer order puts the tag-0
// messages in its unexpected queue by then), then directed receives in reverse rank order, then
// any-source receives; 10 rounds. Every receive must take exactly its own message: shm 1.17
// matched such messages with a stale ignore mask once any receive on the endpoint had used one
// (lost and crossed messages).
int unexpectedMessages(Communicator& c, int rank) {
  const int n = c.size();
  const auto I = DataType::kInt64;
  for (int round = 0; round < 10; ++round) {
    if (rank != 0) {
      std::vector<int64_t> first(3, rank * 100 + round), second(2, rank * 1000 + round);
      int64_t marker = round;
      Request a = c.send(Buffer(first.data(), first.size(), I), 0, 0);
      Request b = c.send(Buffer(second.data(), second.size(), I), 0, 0);
      Request m = c.send(Buffer(&marker, 1, I), 0, 7);
      a.wait();
      b.wait();
      m.wait();
      c.barrier().wait();  // the next round's messages come after this round's receives
      continue;
    }
    for (int from = 1; from < n; ++from) {
      int64_t marker = -1;
      c.recv(Buffer(&marker, 1, I), from, 7).wait();
      if (marker != round) return 3;
    }
    for (int from = n - 1; from >= 1; --from) {
      std::vector<int64_t> got(3, -1);
      c.recv(Buffer(got.data(), got.size(), I), from, 0).wait();
      if (got != std::vector<int64_t>(3, from * 100 + round)) {
        std::fprintf(stderr, "round %d: recv from %d got %lld\n", round, from,
                     static_cast<long long>(got[0]));
        return 1;
      }
    }
    int seen = 0;
    for (int k = 1; k < n; ++k) {
      std::vector<int64_t> got(2, -1);
      Request r = c.recv(Buffer(got.data(), got.size(), I), Communicator::kAnySource, 0);
      r.wait();
      const int from = r.source();
      if (from < 1 || from >= n || (seen & (1 << from)) != 0 ||
          got != std::vector<int64_t>(2, from * 1000 + round)) {
        std::fprintf(stderr, "round %d: any-source recv: source %d, got %lld\n", round, from,
                     static_cast<long long>(got[0]));
        return 2;
      }
      seen |= 1 << from;
    }
    c.barrier().wait();
  }
  return 0;
}

class MpP2p : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_p2p"); }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

TEST_P(MpP2p, RingExchangeAndAnySource) {
  const std::string report = test::forkRanks(kRanks, 120s, [&](int rank) {
    auto c = join(makeFileStore(dir_), GetParam(), rank, 60s);
    return ringExchange(*c, rank);
  });
  EXPECT_EQ(report, "");
}

TEST_P(MpP2p, MessagesThatArriveFirstMatchTheirOwnReceives) {
  const std::string report = test::forkRanks(4, 120s, [&](int rank) {
    auto c = join(makeFileStore(dir_), GetParam(), rank, 60s, 4);
    return unexpectedMessages(*c, rank);
  });
  EXPECT_EQ(report, "");
}

TEST_P(MpP2p, APeerKilledDuringARecvIsNamedWithinSeconds) {
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = makeFileStore(dir_);
    auto c = join(s, GetParam(), rank, 60s);
    c->barrier().wait();
    if (rank != 2) s->set("left" + std::to_string(rank), "1");
    if (rank == 2) {  // once the others have left the barrier (as below)
      s->get("left0", 60s);
      s->get("left1", 60s);
      ::raise(SIGKILL);
    }
    if (rank == 0) {  // stays until rank 1 is done: its exit would be a second dead peer
      s->get("verdict", 60s);
      return 0;
    }
    float x = 0;
    const auto t0 = Clock::now();
    int code = 5;
    try {
      c->recv(Buffer(&x, 1, DataType::kFloat32), 2, 0).wait();
    } catch (const Error& e) {
      code =
          expectFailure(rank, e, {ErrorCode::kPeerFailure}, {"recv #0", "from rank 2 ("}, t0, 20.0);
    }
    s->set("verdict", "1");
    return code;
  });
  EXPECT_EQ(report, "rank 2 killed by signal 9");
}

// Every peer found gone is known, not only the first: after rank 1 died, rank 2 dies while rank
// 0 waits in a recv from it, which must fail as fast as the first.
TEST_P(MpP2p, ASecondPeerKilledIsNamedToo) {
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = makeFileStore(dir_);
    auto c = join(s, GetParam(), rank, 60s);
    c->barrier().wait();
    // Rank 1 dies once the others have left the barrier: a peer that exits while its last
    // barrier message is in flight fails the barrier instead of the recv below.
    if (rank != 1) s->set("left" + std::to_string(rank), "1");
    if (rank == 1) {
      s->get("left0", 60s);
      s->get("left2", 60s);
      ::raise(SIGKILL);
    }
    if (rank == 2) {
      s->get("die", 60s);
      ::raise(SIGKILL);
    }
    float x = 0;
    auto t0 = Clock::now();
    int code = 5;
    try {
      c->recv(Buffer(&x, 1, DataType::kFloat32), 1, 0).wait();
    } catch (const Error& e) {
      code =
          expectFailure(rank, e, {ErrorCode::kPeerFailure}, {"recv #0", "from rank 1 ("}, t0, 20.0);
    }
    s->set("die", "1");
    if (code != 0) return code;
    t0 = Clock::now();
    code = 6;
    try {
      c->recv(Buffer(&x, 1, DataType::kFloat32), 2, 0).wait();
    } catch (const Error& e) {
      code =
          expectFailure(rank, e, {ErrorCode::kPeerFailure}, {"recv #1", "from rank 2 ("}, t0, 20.0);
    }
    return code;
  });
  EXPECT_EQ(report, "rank 1 killed by signal 9; rank 2 killed by signal 9");
}

TEST_P(MpP2p, SizesThatDifferAreAMismatchNamingBothRanks) {
  const std::string report = test::forkRanks(kRanks, 90s, [&](int rank) {
    auto s = makeFileStore(dir_);
    auto c = join(s, GetParam(), rank, 60s);
    std::vector<float> buf(101, 1.f);
    int code = 0;
    if (rank == 0) {
      c->send(Buffer(buf.data(), 100, DataType::kFloat32), 1, 4).wait();
    } else if (rank == 1) {
      const auto t0 = Clock::now();
      try {
        c->recv(Buffer(buf.data(), 101, DataType::kFloat32), 0, 4).wait();
        code = 5;
      } catch (const Error& e) {
        code = expectFailure(rank, e, {ErrorCode::kMismatch},
                             {"rank 1", "from rank 0 (",
                              "sent 400 bytes where this receive "
                              "expects 404"},
                             t0, 15.0);
      }
    }
    c->barrier().wait();  // the communicator's collectives are untouched by it
    return code;
  });
  EXPECT_EQ(report, "");
}

INSTANTIATE_TEST_SUITE_P(Providers, MpP2p, ::testing::Values("shm", "tcp", "net"));

}  // namespace
}  // namespace smddp
