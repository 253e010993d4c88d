// SPDX-License-Identifier: Apache-2.0
// The automatic spin (SMDDP_SPIN_US=-1) follows the CPUs the ranks may use, not the machine's
// core count: two ranks under an affinity mask of one CPU, or in a cgroup whose quota is one
// CPU, do not spin; with a CPU each they do. A long wait burns one CPU at most.
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>
#include <sstream>
#include <string>

#include "loopback/loopback_group.h"

namespace smddp {
namespace {

using testing::makeLoopbackGroup;
using testing::runRanks;

// Builds a group of `n` and checks its chosen spin and that an all_reduce is right.
void expectSpin(int n, int64_t spinUs, const std::string& where) {
  auto comms = makeLoopbackGroup(n);
  for (auto& c : comms) EXPECT_EQ(c->impl().settings().spinUs, spinUs) << where;
  runRanks(comms, [&](int rank, Communicator& c) {
    std::vector<int32_t> v(7, rank + 1);
    c.allReduceBlocking(Buffer(v.data(), v.size(), DataType::kInt32),
                        Buffer(v.data(), v.size(), DataType::kInt32), ReduceOp::kSum);
    for (int32_t x : v) ASSERT_EQ(x, n * (n + 1) / 2) << where;
  });
}

TEST(CoreSpin, FollowsTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  expectSpin(2, 0, "two ranks on one CPU (affinity)");
  expectSpin(1, 20, "one rank on one CPU");
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  const int cpus = CPU_COUNT(&saved);
  expectSpin(2, cpus >= 2 ? 20 : 0, "two ranks, " + std::to_string(cpus) + " CPU(s) allowed");
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool writeFile(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.flush();
  return static_cast<bool>(out);
}

// A child cgroup with a quota of one CPU, this process moved into it and back out (root, a
// writable cgroup v1 cpu hierarchy or v2 with the cpu controller delegable).
class OneCpuCgroup {
 public:
  OneCpuCgroup() {
    std::istringstream lines(readFile("/proc/self/cgroup"));
    for (std::string line; std::getline(lines, line);) {
      const size_t a = line.find(':'), b = line.find(':', a + 1);
      const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
      if (line.compare(0, a, "0") == 0 && controllers.empty()) {
        const std::string root = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
                                     ? "/sys/fs/cgroup"
                                     : "/sys/fs/cgroup/unified";
        trySetUp(root + (path == "/" ? "" : path), true);
      } else if (("," + controllers + ",").find(",cpu,") != std::string::npos && !ready_) {
        trySetUp("/sys/fs/cgroup/" + controllers + (path == "/" ? "" : path), false);
      }
      if (ready_) return;
    }
  }
  ~OneCpuCgroup() {
    if (ready_) {
      writeFile(parent_ + "/cgroup.procs", std::to_string(getpid()));
      rmdir(child_.c_str());
    }
  }
  bool ready() const { return ready_; }
  const std::string& why() const { return why_; }

 private:
  bool trySetUp(const std::string& parent, bool v2) {
    if (v2 && readFile(parent + "/cgroup.controllers").find("cpu") == std::string::npos) {
      why_ += parent + ": no cpu controller; ";
      return false;
    }
    if (v2) writeFile(parent + "/cgroup.subtree_control", "+cpu");
    const std::string child = parent + "/smddp_spin_test_" + std::to_string(getpid());
    if (mkdir(child.c_str(), 0755) != 0) {
      why_ += "cannot create " + child + "; ";
      return false;
    }
    const bool quota = v2 ? writeFile(child + "/cpu.max", "100000 100000")
                          : writeFile(child + "/cpu.cfs_quota_us", "100000") &&
                                readFile(child + "/cpu.cfs_period_us") == "100000\n";
    if (!quota || !writeFile(child + "/cgroup.procs", std::to_string(getpid()))) {
      rmdir(child.c_str());
      why_ += "cannot set a quota in or move into " + child + "; ";
      return false;
    }
    parent_ = parent;
    child_ = child;
    ready_ = true;
    return true;
  }
  bool ready_ = false;
  std::string parent_, child_, why_;
};

TEST(CoreSpin, FollowsTheCgroupQuota) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  if (CPU_COUNT(&mask) < 2) GTEST_SKIP() << "one CPU allowed: a 1-CPU quota changes nothing";
  OneCpuCgroup cgroup;
  if (!cgroup.ready()) GTEST_SKIP() << "no cgroup with a CPU quota can be made here: " << cgroup.why();
  expectSpin(2, 0, "two ranks in a cgroup of one CPU, " + std::to_string(CPU_COUNT(&mask)) +
                       " CPUs in the mask");
}

double processCpuSeconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

// A long wait on an asynchronous collective: one thread drives it (the caller, or the engine
// thread), the other sleeps, so the process burns at most about one CPU while it waits, and the
// waits are counted in memory_stats().
TEST(CoreSpin, ALongWaitBurnsOneCpuAtMost) {
  cpu_set_t mask;
  ASSERT_EQ(sched_getaffinity(0, sizeof(mask), &mask), 0);
  if (CPU_COUNT(&mask) < 2) GTEST_SKIP() << "one CPU allowed: two burners could not show";
  auto comms = makeLoopbackGroup(2);
  constexpr auto kLate = std::chrono::milliseconds(400);
  double ratio = 0;
  for (bool callerWaitsAtOnce : {true, false}) {
    runRanks(comms, [&](int rank, Communicator& c) {
      std::vector<float> v(9, static_cast<float>(rank + 1));
      const Buffer b(v.data(), v.size(), DataType::kFloat32);
      if (rank == 1) {
        std::this_thread::sleep_for(kLate);
        c.allReduce(b, b, ReduceOp::kSum).wait();
      } else {
        const auto start = std::chrono::steady_clock::now();
        const double cpu0 = processCpuSeconds();
        Request r = c.allReduce(b, b, ReduceOp::kSum);
        // Past the engine thread's grace it runs the collective; the caller then sleeps.
        if (!callerWaitsAtOnce) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        r.wait();
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        ratio = (processCpuSeconds() - cpu0) / wall;
      }
      for (float x : v) ASSERT_EQ(x, 3.0f);
    });
    EXPECT_LT(ratio, 1.4) << (callerWaitsAtOnce ? "the caller drives" : "the engine thread drives")
                          << ": CPU seconds per second of waiting";
  }
  const auto stats = comms[0]->memoryStats();
  ASSERT_TRUE(stats.count("wait_yields"));
  EXPECT_GT(stats.at("wait_yields") + stats.at("wait_sleeps"), 0U);
  EXPECT_TRUE(stats.count("wait_contended"));
}

}  // namespace
}  // namespace smddp
