// SPDX-License-Identifier: Apache-2.0
// Leak test: 200 create / collective / destroy cycles of a 2-rank communicator over shm (forked
// ranks). Open file descriptors (/proc/self/fd), threads (/proc/self/task) and resident memory
// (/proc/self/statm) must be as flat at cycle 200 as at cycle 20 (small slack for allocator noise).
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <vector>

#include "fork_ranks.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;

// Entries of a /proc directory, less `own` (the descriptor opendir itself holds in /proc/self/fd).
int countEntries(const char* dir, int own) {
  DIR* d = ::opendir(dir);
  if (d == nullptr) return -1;
  int n = 0;
  while (const dirent* e = ::readdir(d)) n += e->d_name[0] != '.';
  ::closedir(d);
  return n - own;
}

long rssKiB() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return resident * (::sysconf(_SC_PAGESIZE) / 1024);
}

struct Usage {
  int fds, threads;
  long rss;
};

Usage usage() {
  return {countEntries("/proc/self/fd", 1), countEntries("/proc/self/task", 0), rssKiB()};
}

TEST(FailureLeak, CreateDestroyCyclesKeepFdsThreadsAndMemoryFlat) {
  const std::string dir = test::makeTempDir("smddp_leak");
  const std::string report = test::forkRanks(2, 240s, [&](int rank) {
    auto store = makeFileStore(dir);
    Options opts;
    opts.provider = "shm";
    opts.timeout = 30s;
    std::vector<float> a(4096, 1.f);
    Usage at20{}, at200{};
    for (int cycle = 1; cycle <= 200; ++cycle) {
      {
        auto c = Communicator::create(store, rank, 2, opts);
        const Buffer b(a.data(), a.size(), DataType::kFloat32);
        c->allReduce(b, b, ReduceOp::kMax).wait();
      }
      if (cycle == 20) at20 = usage();
      if (cycle == 200) at200 = usage();
    }
    std::fprintf(stderr, "rank %d: cycle 20: %d fds, %d threads, %ld KiB; cycle 200: %d fds, "
                 "%d threads, %ld KiB\n", rank, at20.fds, at20.threads, at20.rss, at200.fds,
                 at200.threads, at200.rss);
    if (at200.fds > at20.fds + 2) return 2;
    if (at200.threads != at20.threads) return 3;
    if (at200.rss > at20.rss + 8 * 1024) return 4;
    return 0;
  });
  test::removeTree(dir);
  EXPECT_EQ(report, "");
}

}  // namespace
}  // namespace smddp
