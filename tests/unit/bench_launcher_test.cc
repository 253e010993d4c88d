// SPDX-License-Identifier: Apache-2.0
// Unit tests of the -np launcher with dummy children: success, a failing rank, a crashing rank, a
// rank that hangs past the bound; the parent always returns within its bound and names the rank.
#include <gtest/gtest.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "launcher.h"

namespace smddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

LaunchLimits shortLimits() {
  LaunchLimits l;
  l.bound = std::chrono::seconds(20);
  l.grace = std::chrono::milliseconds(300);
  return l;
}

TEST(BenchLauncher, EveryRankSucceedsInASharedDirectory) {
  std::ostringstream err;
  // Each child writes its rank into the shared directory; rank 0 waits to see all of them.
  const int rc = launchLocalRanks(
      4,
      [](int rank, const std::string& dir) {
        std::ofstream(dir + "/rank" + std::to_string(rank)) << rank;
        if (rank != 0) return 0;
        for (int tries = 0; tries < 2000; ++tries) {
          int seen = 0;
          for (int r = 0; r < 4; ++r)
            seen += std::filesystem::exists(dir + "/rank" + std::to_string(r));
          if (seen == 4) return 0;
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        }
        return 9;
      },
      shortLimits(), err);
  EXPECT_EQ(rc, 0) << err.str();
  EXPECT_EQ(err.str(), "");
}

TEST(BenchLauncher, ReportsTheFailingRankAndStopsTheOthers) {
  std::ostringstream err;
  const auto start = Clock::now();
  const int rc = launchLocalRanks(
      3,
      [](int rank, const std::string&) {
        if (rank == 1) return 3;
        pause();  // would hang forever: the launcher must kill it after the grace period
        return 0;
      },
      shortLimits(), err);
  EXPECT_EQ(rc, 1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(err.str().find("rank 1 (pid "), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("exited with status 3"), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("rank 0 (pid "), std::string::npos) << err.str();  // still running
}

// SIGKILL, because a crash handler linked into the process may turn SIGSEGV into exit(1).
TEST(BenchLauncher, ReportsACrash) {
  std::ostringstream err;
  const int rc = launchLocalRanks(
      2,
      [](int rank, const std::string&) {
        if (rank == 1) std::raise(SIGKILL);
        return 0;
      },
      shortLimits(), err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.str().find("rank 1 (pid "), std::string::npos) << err.str();
  EXPECT_NE(err.str().find("killed by signal 9"), std::string::npos) << err.str();
}

TEST(BenchLauncher, ExceptionInChildIsAFailure) {
  std::ostringstream err;
  const int rc = launchLocalRanks(
      1, [](int, const std::string&) -> int { throw std::runtime_error("boom"); }, shortLimits(),
      err);
  EXPECT_EQ(rc, 1);
  EXPECT_NE(err.str().find("exited with status 1"), std::string::npos) << err.str();
}

TEST(BenchLauncher, ExplainedStatusFailsQuietly) {
  std::ostringstream err;
  LaunchLimits limits = shortLimits();
  limits.explainedStatus = 3;
  const int rc = launchLocalRanks(
      2, [](int rank, const std::string&) { return rank == 0 ? 3 : 0; }, limits, err);
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(err.str(), "");
}

TEST(BenchLauncher, EnforcesTheBound) {
  std::ostringstream err;
  LaunchLimits limits = shortLimits();
  limits.bound = std::chrono::milliseconds(500);
  const auto start = Clock::now();
  const int rc = launchLocalRanks(
      2,
      [](int, const std::string&) {
        pause();
        return 0;
      },
      limits, err);
  EXPECT_EQ(rc, 1);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_NE(err.str().find("exceeded its bound"), std::string::npos) << err.str();
}

// The allowed CPUs of this process, in order.
std::vector<int> allowedCpus() {
  cpu_set_t set;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
  return cpus;
}

// Launches n ranks with the given binding; each child exits 0 iff its affinity is exactly the
// CPU `want(rank)` names (-1: the parent's whole set).
void expectPlacement(int n, bool roundRobin, const std::function<int(int)>& want) {
  LaunchLimits limits = shortLimits();
  limits.bindCores = true;
  limits.bindRoundRobin = roundRobin;
  const std::vector<int> parent = allowedCpus();
  std::ostringstream err;
  const int rc = launchLocalRanks(
      n,
      [&](int rank, const std::string&) {
        const std::vector<int> mine = allowedCpus();
        const int cpu = want(rank);
        return (cpu < 0 ? mine == parent : mine == std::vector<int>{cpu}) ? 0 : 1;
      },
      limits, err);
  EXPECT_EQ(rc, 0) << "n=" << n << " roundRobin=" << roundRobin << ": " << err.str();
}

TEST(BenchLauncher, BindsOneCorePerRankOrRoundRobin) {
  const std::vector<int> cpus = allowedCpus();
  ASSERT_FALSE(cpus.empty());
  const int c = static_cast<int>(cpus.size());
  // Enough CPUs: rank r on the r-th, with or without round robin.
  const int fit = std::min(c, 4);
  for (bool rr : {false, true}) {
    expectPlacement(fit, rr, [&](int r) { return cpus[static_cast<size_t>(r)]; });
  }
  // With one CPU an unbound rank's set is that CPU already: nothing below could fail.
  if (c < 2) GTEST_SKIP() << "one allowed CPU: round robin is not observable";
  // More ranks than CPUs: unbound, or rank r on the (r mod c)-th.
  expectPlacement(c + 3, false, [](int) { return -1; });
  expectPlacement(c + 3, true, [&](int r) { return cpus[static_cast<size_t>(r % c)]; });
}

}  // namespace
}  // namespace smddp::bench
