// SPDX-License-Identifier: Apache-2.0
// Subgroups: 5 processes each join the world communicator, the communicator of their parity
// ({0, 2, 4} and {1, 3}) and one of their own (world size 1), all on one store, and run every
// collective beyond all_reduce / broadcast / all_gather (reduce_scatter, reduce, gather,
// scatter, all_to_all, all_to_allv with zero pieces, send / recv with a receive from any source)
// on both subgroups at once, while a world all_reduce is in flight. Values name the group, the
// world rank and the index (int32, exact), so a message crossing groups shows as a wrong element.
// Over shm with the arena, shm messages, and tcp.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "fork_ranks.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;

constexpr int kWorld = 5;
constexpr auto I32 = DataType::kInt32;

struct Case {
  std::string provider;
  bool arena;
};

std::shared_ptr<Communicator> join(const std::string& dir, const Case& p, const std::string& name,
                                   int rank, int size) {
  Options opts;
  opts.provider = p.provider;
  opts.sharedMemory = p.arena;
  opts.timeout = 60s;
  opts.name = name;
  return Communicator::create(makeFileStore(dir), rank, size, opts);
}

// The members of a subgroup in world ranks, this process's place among them, and its id.
struct Group {
  std::vector<int> members;
  int self = 0;
  int id = 0;
  int size() const { return static_cast<int>(members.size()); }
};

// What world rank `r` of group `g` contributes at index i.
int32_t value(const Group& g, int r, size_t i) {
  return g.id * 1000 + r * 10 + static_cast<int32_t>(i % 7);
}

int check(const std::vector<int32_t>& got, const std::vector<int32_t>& want, const Group& g,
          const char* what) {
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      std::fprintf(stderr, "group %d (size %d), member %d: %s: element %zu is %d, expected %d\n",
                   g.id, g.size(), g.self, what, i, got[i], want[i]);
      return 1;
    }
  }
  return 0;
}

int reductions(Communicator& c, const Group& g) {
  const int n = g.size(), s = g.self, me = g.members[static_cast<size_t>(s)];
  const size_t block = 3;
  // reduce_scatter (sum): block b of every member's input goes to member b.
  std::vector<int32_t> in(block * static_cast<size_t>(n)), out(block, -1), want(block, 0);
  for (size_t i = 0; i < in.size(); ++i) in[i] = value(g, me, i);
  c.reduceScatter(Buffer(in.data(), in.size(), I32), Buffer(out.data(), block, I32), ReduceOp::kSum)
      .wait();
  for (size_t j = 0; j < block; ++j) {
    for (int r : g.members) want[j] += value(g, r, static_cast<size_t>(s) * block + j);
  }
  if (check(out, want, g, "reduce_scatter") != 0) return 1;
  // reduce (max) to the last member.
  std::vector<int32_t> red(5, -1), redWant(5);
  std::vector<int32_t> redIn(5);
  for (size_t i = 0; i < 5; ++i) redIn[i] = value(g, me, i);
  c.reduce(Buffer(redIn.data(), 5, I32), Buffer(red.data(), 5, I32), ReduceOp::kMax, n - 1).wait();
  for (size_t i = 0; i < 5; ++i) redWant[i] = value(g, g.members.back(), i);  // largest rank
  if (s == n - 1 && check(red, redWant, g, "reduce") != 0) return 1;
  if (s != n - 1 && check(red, std::vector<int32_t>(5, -1), g, "reduce (not root)") != 0) return 1;
  return 0;
}

int rooted(Communicator& c, const Group& g) {
  const int n = g.size(), s = g.self, me = g.members[static_cast<size_t>(s)];
  const size_t block = 3;
  // gather to member 0.
  std::vector<int32_t> in(block), all(block * static_cast<size_t>(n), -1), want;
  for (size_t i = 0; i < block; ++i) in[i] = value(g, me, i);
  c.gather(Buffer(in.data(), block, I32), Buffer(all.data(), all.size(), I32), 0).wait();
  for (int r : g.members) {
    for (size_t i = 0; i < block; ++i) want.push_back(value(g, r, i));
  }
  if (s == 0 && check(all, want, g, "gather") != 0) return 1;
  // scatter from the last member: block b of its input to member b.
  std::vector<int32_t> src(block * static_cast<size_t>(n)), got(block, -1), mine(block);
  for (size_t i = 0; i < src.size(); ++i) src[i] = value(g, me, i);
  c.scatter(Buffer(src.data(), src.size(), I32), Buffer(got.data(), block, I32), n - 1).wait();
  for (size_t j = 0; j < block; ++j) {
    mine[j] = value(g, g.members.back(), static_cast<size_t>(s) * block + j);
  }
  return check(got, mine, g, "scatter");
}

int exchanges(Communicator& c, const Group& g) {
  const int n = g.size(), s = g.self, me = g.members[static_cast<size_t>(s)];
  const size_t block = 2;
  const auto N = static_cast<size_t>(n);
  // all_to_all: block q of member p's input (index q * 100 + j) goes to member q.
  std::vector<int32_t> in(block * N), out(block * N, -1), want(block * N);
  for (size_t q = 0; q < N; ++q) {
    for (size_t j = 0; j < block; ++j) {
      in[q * block + j] = value(g, me, q * 100 + j);
      want[q * block + j] = value(g, g.members[q], static_cast<size_t>(s) * 100 + j);
    }
  }
  c.allToAll(Buffer(in.data(), in.size(), I32), Buffer(out.data(), out.size(), I32)).wait();
  if (check(out, want, g, "all_to_all") != 0) return 1;
  // all_to_allv: member p sends member q (p + q) % 3 elements (zero pieces included).
  std::vector<std::vector<int32_t>> sends(N), recvs(N), wants(N);
  std::vector<Buffer> sendBufs, recvBufs;
  for (size_t q = 0; q < N; ++q) {
    const size_t count = (static_cast<size_t>(s) + q) % 3;
    sends[q].resize(count);
    recvs[q].assign(count, -1);
    for (size_t j = 0; j < count; ++j) {
      sends[q][j] = value(g, me, q * 100 + j);
      wants[q].push_back(value(g, g.members[q], static_cast<size_t>(s) * 100 + j));
    }
    sendBufs.emplace_back(sends[q].data(), count, I32);
    recvBufs.emplace_back(recvs[q].data(), count, I32);
  }
  c.allToAllV(sendBufs, recvBufs).wait();
  for (size_t q = 0; q < N; ++q) {
    if (check(recvs[q], wants[q], g, "all_to_allv") != 0) return 1;
  }
  return 0;
}

int pointToPoint(Communicator& c, const Group& g) {
  const int n = g.size(), s = g.self, me = g.members[static_cast<size_t>(s)];
  if (n == 1) return 0;
  const int next = (s + 1) % n, prev = (s + n - 1) % n;
  std::vector<int32_t> out(4), in(4, -1), want(4);
  for (size_t i = 0; i < 4; ++i) {
    out[i] = value(g, me, i);
    want[i] = value(g, g.members[static_cast<size_t>(prev)], i);
  }
  Request r = c.recv(Buffer(in.data(), 4, I32), prev, 5);
  c.send(Buffer(out.data(), 4, I32), next, 5).wait();
  r.wait();
  if (check(in, want, g, "send/recv ring") != 0) return 1;
  // Every other member reports to member 0, which takes them from any source.
  int32_t v = value(g, me, 0);
  if (s != 0) {
    c.send(Buffer(&v, 1, I32), 0, 6).wait();
    return 0;
  }
  int seen = 0;
  for (int k = 1; k < n; ++k) {
    Request any = c.recv(Buffer(&v, 1, I32), Communicator::kAnySource, 6);
    any.wait();
    const int from = any.source();
    if (from < 1 || from >= n || (seen & (1 << from)) != 0 ||
        v != value(g, g.members[static_cast<size_t>(from)], 0)) {
      std::fprintf(stderr, "group %d: any-source recv: source %d, value %d\n", g.id, from, v);
      return 1;
    }
    seen |= 1 << from;
  }
  return 0;
}

int runGroup(Communicator& c, const Group& g) {
  if (c.size() != g.size() || c.rank() != g.self) return 9;
  for (int round = 0; round < 3; ++round) {
    if (reductions(c, g) != 0 || rooted(c, g) != 0 || exchanges(c, g) != 0 ||
        pointToPoint(c, g) != 0) {
      return 1;
    }
  }
  c.barrier().wait();
  return 0;
}

int body(const std::string& dir, const Case& p, int rank) {
  auto world = join(dir, p, "world", rank, kWorld);
  Group parity;
  parity.id = 1 + rank % 2;
  for (int r = rank % 2; r < kWorld; r += 2) parity.members.push_back(r);
  parity.self = rank / 2;
  Group solo{{rank}, 0, 10 + rank};
  auto half = join(dir, p, rank % 2 == 0 ? "even" : "odd", parity.self, parity.size());
  auto own = join(dir, p, "solo" + std::to_string(rank), 0, 1);
  // A world all_reduce in flight meanwhile: its values must not mix with the subgroups'.
  std::vector<int32_t> sum(1000, rank);
  Request pending = world->allReduce(Buffer(sum.data(), sum.size(), I32),
                                     Buffer(sum.data(), sum.size(), I32), ReduceOp::kSum);
  if (runGroup(*half, parity) != 0 || runGroup(*own, solo) != 0) return 1;
  pending.wait();
  for (size_t i = 0; i < sum.size(); ++i) {
    if (sum[i] != kWorld * (kWorld - 1) / 2) {
      std::fprintf(stderr, "rank %d: world all_reduce element %zu is %d\n", rank, i, sum[i]);
      return 1;
    }
  }
  world->barrier().wait();
  return 0;
}

class MpSubgroups : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_subgroups"); }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

TEST_P(MpSubgroups, EveryCollectiveOnTwoSubgroupsAtOnce) {
  const std::string report =
      test::forkRanks(kWorld, 180s, [&](int rank) { return body(dir_, GetParam(), rank); });
  EXPECT_EQ(report, "");
}

INSTANTIATE_TEST_SUITE_P(Providers, MpSubgroups,
                         ::testing::Values(Case{"shm", true}, Case{"shm", false},
                                           Case{"tcp", false}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.provider + (info.param.arena ? "_arena" : "");
                         });

}  // namespace
}  // namespace smddp
