// SPDX-License-Identifier: Apache-2.0
// shm endpoint names and the removal of dead processes' regions (see shm_regions.h).
#include "transport/ofi/shm_regions.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <random>

#include "common/logging.h"

namespace smddp::transport::ofi {
namespace {

constexpr const char* kStem = "smddp-";

bool processExists(int pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

// The pid in "smddp-<pidns>-<pid>-..." when <pidns> is `pidns`; -1 otherwise.
int pidOf(const std::string& name, const std::string& pidns) {
  const std::string head = kStem + pidns + "-";
  if (pidns.empty() || name.compare(0, head.size(), head) != 0) return -1;
  const char* digits = name.c_str() + head.size();
  char* end = nullptr;
  const long pid = std::strtol(digits, &end, 10);
  if (end == digits || *end != '-' || pid <= 0) return -1;
  return static_cast<int>(pid);
}

}  // namespace

std::string pidNamespace() {
  char link[64] = {0};
  const ssize_t n = ::readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
  if (n <= 0) return "";
  const std::string text(link, static_cast<size_t>(n));  // "pid:[4026531836]"
  const size_t open = text.find('[');
  const size_t close = text.find(']');
  if (open == std::string::npos || close == std::string::npos || close <= open + 1) return "";
  return text.substr(open + 1, close - open - 1);
}

std::string shmEndpointName() {
  static std::atomic<uint64_t> counter{0};
  static const std::string pidns = pidNamespace();
  std::random_device entropy;
  char name[96];
  std::snprintf(name, sizeof(name), "%s%s-%d-%llu-%08x", kStem,
                pidns.empty() ? "0" : pidns.c_str(), static_cast<int>(::getpid()),
                static_cast<unsigned long long>(counter.fetch_add(1)), entropy());
  return name;
}

int removeDeadRegions(const std::string& directory, const std::string& pidns,
                      const std::function<bool(int)>& alive) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return 0;
  int removed = 0;
  while (dirent* e = ::readdir(dir)) {
    const std::string name = e->d_name;
    const int pid = pidOf(name, pidns);
    if (pid < 0 || pid == ::getpid()) continue;
    if (alive ? alive(pid) : processExists(pid)) continue;
    if (::unlink((directory + "/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

void removeDeadRegionsOnce(int rank) {
  static std::once_flag once;
  std::call_once(once, [rank] {
    const int removed = removeDeadRegions("/dev/shm", pidNamespace());
    if (removed > 0) {
      SMDDP_INFO(rank, "removed " << removed
                                  << " shm region(s) of processes that died without closing them");
    }
  });
}

}  // namespace smddp::transport::ofi
