// SPDX-License-Identifier: Apache-2.0
// Straggler detection end to end (smddp/straggler.h): forked ranks on one host over shm, a file
// store, the default threshold and beacon period. A rank that sleeps 20 ms before each all_reduce
// is named by rank 0's report within 100 collectives, and the other ranks' copies name it too; no
// other rank is ever named. Ranks that all do the same work name nobody over 10,000 collectives
// (most of them compared). SMDDP_STRAGGLER_MS=0 turns it off. forkRanks bounds every case.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "fork_ranks.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;

std::shared_ptr<Communicator> join(const std::string& dir, int rank, int size) {
  Options opts;
  opts.provider = "shm";
  opts.timeout = 60s;
  return Communicator::create(makeFileStore(dir), rank, size, opts);
}

// All-reduces 256 floats (rank r gives r + 1 + k), checks the sum; false on a wrong value.
bool allReduceChecked(Communicator& c, int k) {
  const int n = c.size();
  std::vector<float> in(256, static_cast<float>(c.rank() + 1 + k)), out(256, -1.f);
  c.allReduceBlocking(Buffer(in.data(), in.size(), DataType::kFloat32),
                      Buffer(out.data(), out.size(), DataType::kFloat32), ReduceOp::kSum);
  const float want = static_cast<float>(n * (n + 1) / 2 + n * k);
  for (float v : out) {
    if (v != want) return false;
  }
  return true;
}

bool namesOnly(const StragglerReport& r, int slow) {
  for (int named : r.named) {
    if (named != slow) return false;
  }
  for (const auto& s : r.ranks) {
    if (s.rank != slow && s.namedWindows != 0) return false;
  }
  return true;
}

class Straggler : public ::testing::TestWithParam<int> {
 protected:
  void SetUp() override { dir_ = test::makeTempDir("smddp_straggler"); }
  void TearDown() override { test::removeTree(dir_); }
  std::string dir_;
};

TEST_P(Straggler, ASleepingRankIsNamedWithinAHundredCollectives) {
  const int n = GetParam();
  const int slow = n / 2 + 1;
  constexpr int kCalls = 150;
  const std::string report = test::forkRanks(n, 120s, [&](int rank) {
    auto c = join(dir_, rank, n);
    int firstNamed = -1;
    for (int k = 0; k < kCalls; ++k) {
      if (rank == slow) std::this_thread::sleep_for(20ms);
      if (!allReduceChecked(*c, k)) return 6;
      const StragglerReport r = c->stragglerReport();
      if (!r.enabled) return 7;
      if (!namesOnly(r, slow)) {
        std::fprintf(stderr, "rank %d: the report names another rank at call %d\n", rank, k);
        return 4;
      }
      if (firstNamed < 0 && r.named == std::vector<int>{slow}) firstNamed = k;
    }
    const StragglerReport r = c->stragglerReport();
    std::fprintf(stderr, "rank %d: first named at call %d; %llu windows, %llu collectives\n", rank,
                 firstNamed, static_cast<unsigned long long>(r.windows),
                 static_cast<unsigned long long>(r.collectives));
    if (firstNamed < 0) return rank == 0 ? 2 : 5;
    if (rank == 0 && firstNamed >= 100) return 3;
    if (rank == 0) {
      const StragglerRank& s = r.ranks.at(0);
      if (s.rank != slow || s.meanLatenessMs < 15 ||
          s.collectives != std::vector<std::string>{"all_reduce"}) {
        return 8;
      }
    }
    c->barrier();  // nobody leaves while another still waits for its answer
    return 0;
  });
  EXPECT_EQ(report, "");
}

TEST_P(Straggler, EqualRanksNameNobodyOverTenThousandCollectives) {
  const int n = GetParam();
  constexpr int kCalls = 10000;
  const std::string report = test::forkRanks(n, 150s, [&](int rank) {
    ::setenv("SMDDP_BEACON_MS", "100", 1);  // the ring then holds every call between two reads
    auto c = join(dir_, rank, n);
    for (int k = 0; k < kCalls; ++k) {
      std::this_thread::sleep_for(200us);  // the same work on every rank
      if (!allReduceChecked(*c, k % 64)) return 6;
    }
    std::this_thread::sleep_for(500ms);  // the last windows are answered
    c->barrier();
    const StragglerReport r = c->stragglerReport();
    if (!r.enabled) return 7;
    for (const auto& s : r.ranks) {
      if (s.namedWindows != 0 || s.named) {
        std::fprintf(stderr, "rank %d: rank %d named in %llu windows (late %llu times)\n", rank,
                     s.rank, static_cast<unsigned long long>(s.namedWindows),
                     static_cast<unsigned long long>(s.lateArrivals));
        return 4;
      }
    }
    std::fprintf(stderr, "rank %d: %llu of %d collectives compared in %llu windows\n", rank,
                 static_cast<unsigned long long>(r.collectives), kCalls,
                 static_cast<unsigned long long>(r.windows));
    if (rank == 0 && r.collectives < kCalls / 2) return 3;
    return 0;
  });
  EXPECT_EQ(report, "");
}

INSTANTIATE_TEST_SUITE_P(Ranks, Straggler, ::testing::Values(3, 5));

TEST(StragglerOff, ZeroThresholdTurnsItOff) {
  const std::string dir = test::makeTempDir("smddp_straggler_off");
  const std::string report = test::forkRanks(2, 60s, [&](int rank) {
    ::setenv("SMDDP_STRAGGLER_MS", "0", 1);
    auto c = join(dir, rank, 2);
    for (int k = 0; k < 40; ++k) {
      if (!allReduceChecked(*c, k)) return 6;
    }
    return c->stragglerReport().enabled ? 2 : 0;
  });
  test::removeTree(dir);
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace smddp
