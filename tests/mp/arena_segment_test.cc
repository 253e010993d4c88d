// SPDX-License-Identifier: Apache-2.0
// The shared-memory arena bootstrap (algorithms/arena/segment.h) with ranks as threads of one
// process: each rank maps the object on its own (distinct addresses), so a word one writes must be
// seen by the others through their own mapping; the object is unlinked once all mapped it (nothing
// left in /dev/shm); a size /dev/shm cannot hold fails on every rank with the reason, no SIGBUS;
// and ranks configured differently fall back together.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/arena/segment.h"
#include "fork_ranks.h"
#include "smddp/store.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;

// Names of this process's arena objects currently in /dev/shm.
std::vector<std::string> ourObjects() {
  std::vector<std::string> names;
  const std::string mine = "smddp-" + std::to_string(getpid()) + "-";
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.rfind(mine, 0) == 0) names.push_back(name);
    }
    closedir(d);
  }
  return names;
}

struct Joined {
  std::unique_ptr<algo::arena::Segment> arena;
  std::string why;
  std::string error;
};

std::vector<Joined> joinAll(
    int n, size_t slotBytes, const std::string& prefix,
    const std::function<bool(int)>& wanted = [](int) { return true; },
    const std::function<size_t(int)>& eagerBytes = [](int) { return size_t{4096}; },
    const std::function<size_t(int)>& mailBytes = [](int) { return size_t{4096}; }) {
  const std::string dir = test::makeTempDir("smddp-arena");
  auto store = makeFileStore(dir);
  std::vector<Joined> out(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      Joined& j = out[static_cast<size_t>(r)];
      try {
        j.arena = algo::arena::createSegment(*store, prefix, r, n, slotBytes, eagerBytes(r),
                                             mailBytes(r), 10s, wanted(r), j.why);
      } catch (const std::exception& e) {
        j.error = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  test::removeTree(dir);
  return out;
}

TEST(Segment, EveryRankSeesEveryOthersWritesAndNothingIsLeftBehind) {
  constexpr int kRanks = 3;
  auto ranks = joinAll(kRanks, 4096, "ok");
  for (int r = 0; r < kRanks; ++r) {
    auto& j = ranks[static_cast<size_t>(r)];
    ASSERT_TRUE(j.arena) << "rank " << r << ": " << j.why << j.error;
    EXPECT_EQ(j.arena->rank(), r);
    EXPECT_EQ(j.arena->size(), kRanks);
    EXPECT_EQ(j.arena->slotBytes(), 4096u);
  }
  EXPECT_NE(ranks[0].arena->slot(0, 0), ranks[1].arena->slot(0, 0)) << "expected separate maps";
  for (int w = 0; w < kRanks; ++w) {
    auto& writer = *ranks[static_cast<size_t>(w)].arena;
    writer.posted(w).store(100 + static_cast<uint64_t>(w));
    writer.slot(w, 1)[4095] = static_cast<unsigned char>(7 + w);
    for (int to = 0; to < kRanks; ++to) {  // a letter to every rank, the last byte that fits
      ASSERT_EQ(writer.mailPayload(), 4096u);
      writer.mailData(w, to, 9)[4095] = static_cast<unsigned char>(10 * w + to);
      writer.mailHeader(w, to, 9).stamp.store(10);
      writer.mailRead(w, to).store(static_cast<uint64_t>(20 + to));
    }
  }
  for (int r = 0; r < kRanks; ++r) {
    auto& reader = *ranks[static_cast<size_t>(r)].arena;
    for (int w = 0; w < kRanks; ++w) {
      EXPECT_EQ(reader.posted(w).load(), 100u + static_cast<uint64_t>(w)) << r << " reads " << w;
      EXPECT_EQ(reader.slot(w, 1)[4095], 7 + w) << r << " reads " << w;
      EXPECT_EQ(reader.consumed(w).load(), 0u);  // fresh memory starts at zero
      for (int to = 0; to < kRanks; ++to) {
        EXPECT_EQ(reader.mailData(w, to, 9)[4095], 10 * w + to) << r << " reads " << w;
        EXPECT_EQ(reader.mailHeader(w, to, 9).stamp.load(), 10u) << r << " reads " << w;
        EXPECT_EQ(reader.mailHeader(w, to, 10).stamp.load(), 0u) << r << " reads " << w;
        EXPECT_EQ(reader.mailRead(w, to).load(), static_cast<uint64_t>(20 + to));
      }
    }
  }
  const auto left = ourObjects();
  EXPECT_TRUE(left.empty()) << "left in /dev/shm: " << left[0];
}

TEST(Segment, ImpossibleSizeFailsOnEveryRankWithTheReason) {
  auto ranks = joinAll(2, size_t{1} << 42, "huge");  // 2 x 16 TiB: far beyond /dev/shm
  for (int r = 0; r < 2; ++r) {
    auto& j = ranks[static_cast<size_t>(r)];
    EXPECT_FALSE(j.arena) << "rank " << r;
    EXPECT_TRUE(j.error.empty()) << j.error;
    EXPECT_NE(j.why.find("/dev/shm"), std::string::npos) << "rank " << r << ": " << j.why;
  }
  EXPECT_NE(ranks[1].why.find("rank 0"), std::string::npos) << ranks[1].why;
  EXPECT_TRUE(ourObjects().empty());
}

// A rank configured without the arena (SMDDP_ARENA=0 there only): nobody waits for anybody, every
// rank returns quickly without an arena, and the others are told why.
TEST(Segment, RanksThatDisagreeFallBackTogether) {
  for (int off : {0, 2}) {
    const auto t0 = std::chrono::steady_clock::now();
    auto ranks =
        joinAll(3, 4096, "disagree" + std::to_string(off), [off](int r) { return r != off; });
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "ranks waited for each other";
    for (int r = 0; r < 3; ++r) {
      auto& j = ranks[static_cast<size_t>(r)];
      EXPECT_FALSE(j.arena) << "rank " << r << " (off: rank " << off << ")";
      EXPECT_TRUE(j.error.empty()) << j.error;
      EXPECT_FALSE(j.why.empty()) << "rank " << r;
      if (r == off || off == 0) {  // its own reason, or rank 0's passed on to every rank
        EXPECT_NE(j.why.find("not wanted"), std::string::npos) << "rank " << r << ": " << j.why;
      }
    }
    EXPECT_TRUE(ourObjects().empty());
  }
}

// Eager sizes that give the same entry size (hence the same object size) but different
// broadcast thresholds: the ranks must not map the arena, or they would pick different algorithms.
TEST(Segment, RanksWithAnotherEagerSizeFallBackTogether) {
  ASSERT_EQ(algo::arena::Segment::eagerStride(4001), algo::arena::Segment::eagerStride(4008));
  auto ranks = joinAll(
      3, 4096, "eager", [](int) { return true; },
      [](int r) { return r == 2 ? size_t{4008} : size_t{4001}; });
  for (int r = 0; r < 3; ++r) {
    auto& j = ranks[static_cast<size_t>(r)];
    EXPECT_FALSE(j.arena) << "rank " << r;
    EXPECT_TRUE(j.error.empty()) << j.error;
  }
  EXPECT_NE(ranks[2].why.find("4096/4008/4096 here but 4096/4001/4096 on rank 0"),
            std::string::npos)
      << ranks[2].why;
  EXPECT_TRUE(ourObjects().empty());
}

// Another mail size on one rank: the letters would not line up, so nobody maps the arena.
TEST(Segment, RanksWithAnotherMailSizeFallBackTogether) {
  auto ranks = joinAll(
      3, 4096, "mail", [](int) { return true; }, [](int) { return size_t{4096}; },
      [](int r) { return r == 1 ? size_t{0} : size_t{4096}; });
  for (int r = 0; r < 3; ++r) {
    auto& j = ranks[static_cast<size_t>(r)];
    EXPECT_FALSE(j.arena) << "rank " << r;
    EXPECT_TRUE(j.error.empty()) << j.error;
  }
  EXPECT_NE(ranks[1].why.find("4096/4096/0 here but 4096/4096/4096 on rank 0"), std::string::npos)
      << ranks[1].why;
  EXPECT_TRUE(ourObjects().empty());
}

// Letters shrink where a large group would otherwise fill /dev/shm, to the same size on every
// rank; none below 64 bytes.
TEST(Segment, LettersShrinkWithTheGroupAndTheRegionHoldsThem) {
  using algo::arena::Segment;
  EXPECT_EQ(Segment::mailPayload(4096, 2), 4096u);
  EXPECT_EQ(Segment::mailPayload(4096, 64), 4096u);
  EXPECT_EQ(Segment::mailPayload(100, 8), 100u);
  EXPECT_EQ(Segment::mailPayload(0, 8), 0u);
  EXPECT_EQ(Segment::mailPayload(4096, 1), 0u) << "nobody to write to";
  const size_t big = Segment::mailPayload(65536, 256);
  EXPECT_LT(big, 65536u);
  EXPECT_GE(big, 64u);
  EXPECT_EQ(big % 64, 0u);
  EXPECT_EQ(Segment::mailPayload(65536, 100000), 0u);
  for (int n : {2, 3, 64, 256}) {
    const size_t payload = Segment::mailPayload(65536, n);
    const size_t without = Segment::regionBytes(4096, 4096, 0, n);
    const size_t with = Segment::regionBytes(4096, 4096, 65536, n);
    EXPECT_GE(with - without, static_cast<size_t>(n) * Segment::kMailDepth * payload) << n;
    EXPECT_LE(with - without, (size_t{4} << 20) + 4096) << n;
  }
}

}  // namespace
}  // namespace smddp
