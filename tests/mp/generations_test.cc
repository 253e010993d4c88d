// SPDX-License-Identifier: Apache-2.0
// Communicators whose members the application chooses (Options::generation: what torch's
// reconfigure and shrink build on), over real libfabric, 4 forked processes on one file store:
//   - successive generations with other members in other orders (ranks by position), processes
//     outside a generation idle meanwhile; exact int32 results name member and generation;
//   - a member that dies inside a generation: the survivors fail promptly naming it (the failure
//     hook saw kPeerFailure once), abort that generation with a reason its errors name, and go on
//     in a new generation without it;
//   - 40 generations in a row leave fds and threads where they were after the 5th;
//   - a malformed generation key is refused before anything is published.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "fork_ranks.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

constexpr int kProcs = 4;

class GenerationsMp : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_generations_mp"); }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

// This process's communicator in generation `key` among `members` (process ids, rank = position),
// or nullptr when it is not a member.
std::shared_ptr<Communicator> form(const std::string& dir, const std::string& provider,
                                   const std::string& key, const std::vector<int>& members,
                                   int self) {
  int rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i] == self) rank = static_cast<int>(i);
  }
  if (rank < 0) return nullptr;
  Options opts;
  opts.provider = provider;
  opts.timeout = 60s;
  opts.name = "pg";
  opts.generation = key;
  return Communicator::create(makeFileStore(dir), rank, static_cast<int>(members.size()), opts);
}

// all_reduce(SUM) of member-specific int32 values, checked against the closed form; returns 0 or
// a nonzero code after printing what was wrong.
int checkSum(Communicator& c, const std::vector<int>& members, int self, int generation) {
  constexpr size_t kCount = 1001;  // odd: not a multiple of any world size here
  std::vector<int32_t> v(kCount);
  for (size_t i = 0; i < kCount; ++i) v[i] = (self + 1) * 100 + static_cast<int32_t>(i % 13);
  const Buffer b(v.data(), kCount, DataType::kInt32);
  c.allReduce(b, b, ReduceOp::kSum).wait();
  int32_t base = 0;
  for (int m : members) base += (m + 1) * 100;
  for (size_t i = 0; i < kCount; ++i) {
    const int32_t want = base + static_cast<int32_t>(members.size()) * static_cast<int32_t>(i % 13);
    if (v[i] != want) {
      std::fprintf(stderr, "process %d, generation %d: element %zu is %d, expected %d\n", self,
                   generation, i, v[i], want);
      return 10 + generation;
    }
  }
  return 0;
}

int countEntries(const char* dir) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++n;
  }
  return n;
}

TEST_P(GenerationsMp, MembersAndOrderChangeFromGenerationToGeneration) {
  const std::vector<std::vector<int>> generations = {{0, 1, 2, 3}, {3, 1}, {2, 0, 1, 3}, {1},
                                                     {0, 2, 3}};
  const std::string report = test::forkRanks(kProcs, 120s, [&](int self) {
    for (size_t g = 0; g < generations.size(); ++g) {
      auto c = form(dir_, GetParam(), "gen" + std::to_string(g), generations[g], self);
      if (!c) continue;
      if (int bad = checkSum(*c, generations[g], self, static_cast<int>(g))) return bad;
      // The member at position 0 broadcasts its process id: ranks are positions.
      int32_t root = self;
      c->broadcast(Buffer(&root, 1, DataType::kInt32), Buffer(&root, 1, DataType::kInt32), 0)
          .wait();
      if (root != generations[g][0]) return 30 + static_cast<int>(g);
    }
    return 0;
  });
  EXPECT_EQ(report, "");
}

TEST_P(GenerationsMp, SurvivorsOfALostMemberGoOnInANewGeneration) {
  constexpr int kVictim = 2;
  const std::string report = test::forkRanks(kProcs, 120s, [&](int self) {
    const std::vector<int> all = {0, 1, 2, 3};
    auto c = form(dir_, GetParam(), "first", all, self);
    if (int bad = checkSum(*c, all, self, 0)) return bad;
    std::atomic<int> hookCalls{0};
    std::atomic<ErrorCode> hookCode{ErrorCode::kInternal};
    c->setFailureHook([&](ErrorCode code, const std::string&) {
      hookCode = code;
      ++hookCalls;
    });
    if (self == kVictim) ::_exit(0);  // gone without a word, before the next collective
    const auto t0 = Clock::now();
    try {
      checkSum(*c, all, self, 1);
      return 40;  // the collective cannot succeed without the victim
    } catch (const Error& e) {
      const double took = std::chrono::duration<double>(Clock::now() - t0).count();
      std::fprintf(stderr, "process %d after %.2f s: [%s] %s\n", self, took, toString(e.code()),
                   e.what());
      if (std::string(e.what()).find("rank 2") == std::string::npos) return 41;
      if (took > 15) return 42;
    }
    if (hookCalls != 1 || hookCode != ErrorCode::kPeerFailure) return 43;
    c->abort("replaced by generation 'second'");
    try {
      c->barrier().wait();
      return 44;
    } catch (const Error& e) {
      if (std::string(e.what()).find("replaced by generation 'second'") == std::string::npos) {
        return 45;
      }
    }
    if (hookCalls != 1) return 46;
    c.reset();
    const std::vector<int> survivors = {0, 1, 3};
    auto next = form(dir_, GetParam(), "second", survivors, self);
    if (int bad = checkSum(*next, survivors, self, 2)) return bad;
    return checkSum(*next, survivors, self, 3);
  });
  EXPECT_EQ(report, "");
}

TEST_P(GenerationsMp, FortyGenerationsLeaveNoFdsOrThreadsBehind) {
  const std::string report = test::forkRanks(kProcs, 240s, [&](int self) {
    const std::vector<int> all = {0, 1, 2, 3};
    int fds = 0;
    int threads = 0;
    for (int g = 1; g <= 40; ++g) {
      {
        auto c = form(dir_, GetParam(), "cycle" + std::to_string(g), all, self);
        if (int bad = checkSum(*c, all, self, 0)) return bad;
      }
      if (g == 5) {
        fds = countEntries("/proc/self/fd");
        threads = countEntries("/proc/self/task");
      }
    }
    const int fdsNow = countEntries("/proc/self/fd");
    const int threadsNow = countEntries("/proc/self/task");
    std::fprintf(stderr, "process %d: fds %d -> %d, threads %d -> %d\n", self, fds, fdsNow,
                 threads, threadsNow);
    if (fdsNow > fds + 2) return 50;
    if (threadsNow > threads) return 51;
    return 0;
  });
  EXPECT_EQ(report, "");
}

TEST(Generations, MalformedKeyIsRefusedBeforeAnythingIsPublished) {
  const std::string dir = test::makeTempDir("smddp_generations_key");
  for (const std::string key : {"", "a/b"}) {
    Options opts;
    opts.generation = key;
    try {
      Communicator::create(makeFileStore(dir), 0, 1, opts);
      ADD_FAILURE() << "key '" << key << "' was accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("generation key"), std::string::npos) << e.what();
    }
  }
  int keys = 0;  // the store's own files (its .job claim) start with a dot, keys with "k_"
  for (const auto& e : std::filesystem::directory_iterator(dir)) keys += e.path().filename().string()[0] != '.';
  EXPECT_EQ(keys, 0) << "nothing may reach the store";
  test::removeTree(dir);
}

INSTANTIATE_TEST_SUITE_P(Providers, GenerationsMp, ::testing::Values("shm", "tcp"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace smddp
