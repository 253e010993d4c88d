// SPDX-License-Identifier: Apache-2.0
// Fork-based local launcher of the perf tools. The parent polls waitpid (WNOHANG) so it can enforce
// its bound; children leave through _exit so the parent's atexit handlers and stdio buffers are
// not run or flushed twice.
#include "launcher.h"

#include <signal.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <thread>
#include <vector>

namespace smddp::bench {
namespace {

using Clock = std::chrono::steady_clock;

std::string makeTempDir() {
  std::string pattern = (std::filesystem::temp_directory_path() / "smddp-bench-XXXXXX").string();
  if (mkdtemp(pattern.data()) == nullptr) {
    throw std::runtime_error("cannot create a temporary directory " + pattern + ": " +
                             std::strerror(errno));
  }
  return pattern;
}

// The CPU for each of n ranks: the allowed set's first n; when fewer are allowed, the allowed
// ones in turn (roundRobin) or none (empty).
std::vector<int> cpusFor(int n, bool roundRobin) {
  cpu_set_t allowed;
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) return cpus;
  if (CPU_COUNT(&allowed) < n && !roundRobin) return cpus;
  std::vector<int> usable;
  for (int cpu = 0; cpu < CPU_SETSIZE && static_cast<int>(usable.size()) < n; ++cpu) {
    if (CPU_ISSET(cpu, &allowed)) usable.push_back(cpu);
  }
  for (int r = 0; r < n && !usable.empty(); ++r) cpus.push_back(usable[r % usable.size()]);
  return cpus;
}

[[noreturn]] void runChild(int rank, const std::string& dir, int cpu, pid_t launcher,
                           const std::function<int(int, const std::string&)>& child) {
  if (cpu >= 0) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    sched_setaffinity(0, sizeof one, &one);  // best effort: placement only affects speed
  }
  // A rank must not outlive a launcher that was killed (it would wait for peers until timeout).
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  // The launcher died before prctl took effect: compared with its pid, not with 1, because the
  // launcher is pid 1 itself when it is a container's main process.
  if (getppid() != launcher) _exit(1);
  int rc = 1;
  try {
    rc = child(rank, dir);
  } catch (const std::exception& e) {
    std::cerr << "rank " << rank << ": " << e.what() << std::endl;
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  _exit(rc);
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           strsignal(WTERMSIG(status)) + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

bool failed(int status) { return !WIFEXITED(status) || WEXITSTATUS(status) != 0; }

// Sends sig to every child still running.
void signalAll(const std::vector<pid_t>& pids, const std::vector<bool>& done, int sig) {
  for (size_t r = 0; r < pids.size(); ++r) {
    if (!done[r]) kill(pids[r], sig);
  }
}

// Reaps every child that has ended; reports the first failures. Returns how many still run.
int reap(const std::vector<pid_t>& pids, std::vector<bool>& done, bool quiet, int explained,
         int& result, std::ostream& err) {
  int running = 0;
  for (size_t r = 0; r < pids.size(); ++r) {
    if (done[r]) continue;
    int status = 0;
    if (waitpid(pids[r], &status, WNOHANG) != pids[r]) {
      ++running;
      continue;
    }
    done[r] = true;
    if (failed(status)) {
      const bool known = WIFEXITED(status) && WEXITSTATUS(status) == explained;
      if (!quiet && !known)
        err << "rank " << r << " (pid " << pids[r] << ") " << describe(status) << "\n";
      result = 1;
    }
  }
  return running;
}

}  // namespace

int launchLocalRanks(int n, const std::function<int(int rank, const std::string& dir)>& child,
                     const LaunchLimits& limits, std::ostream& err) {
  const std::string dir = makeTempDir();
  std::cout.flush();
  std::fflush(nullptr);  // nothing buffered may be printed by every child again
  std::vector<pid_t> pids(n, -1);
  std::vector<bool> done(n, false);
  int result = 0;
  const std::vector<int> cpus =
      limits.bindCores ? cpusFor(n, limits.bindRoundRobin) : std::vector<int>();
  const pid_t launcher = getpid();
  for (int r = 0; r < n; ++r) {
    const int cpu = cpus.empty() ? -1 : cpus[static_cast<size_t>(r)];
    pids[r] = fork();
    if (pids[r] == 0) runChild(r, dir, cpu, launcher, child);
    if (pids[r] < 0) {
      err << "fork of rank " << r << " failed: " << std::strerror(errno) << "\n";
      done[r] = true;
      result = 1;
    }
  }
  auto deadline = Clock::now() + limits.bound;
  bool failureSeen = result != 0, killed = false;
  while (reap(pids, done, killed, limits.explainedStatus, result, err) > 0) {
    if (result != 0 && !failureSeen) {
      failureSeen = true;
      deadline = std::min(deadline, Clock::now() + limits.grace);
    }
    if (!killed && Clock::now() >= deadline) {
      err << (failureSeen ? "stopping the remaining ranks after the failure above\n"
                          : "the run exceeded its bound (-L); stopping every rank\n");
      for (int r = 0; r < n; ++r) {
        if (!done[r]) err << "  rank " << r << " (pid " << pids[r] << ") still running\n";
      }
      signalAll(pids, done, SIGKILL);  // cannot be ignored: the next reaps end the loop
      killed = true;
      result = 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return result;
}

}  // namespace smddp::bench
