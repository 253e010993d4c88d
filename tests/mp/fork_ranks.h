// SPDX-License-Identifier: Apache-2.0
// Test helper: runs one function as N forked "ranks" and reports, naming the rank, every one that
// failed, crashed or overran. Invariant: forkRanks returns within `limit` (plus the kill and reap of
// stragglers): a hung rank is killed with SIGKILL and reported, never waited for.
//
// Children leave with _exit so that no gtest or static destructor of the parent runs twice. Fork
// before the test starts any thread: a child gets only the forking thread.
#pragma once

#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace smddp::test {

// Exit codes of a child: 0 ok, body's own code, or these.
constexpr int kChildThrew = 101;
constexpr int kChildThrewUnknown = 102;

// Runs body(rank) in `n` children. Returns "" when every rank returned 0, else one line per bad
// rank ("rank 2 exited with code 3; rank 0 killed after 30000 ms").
inline std::string forkRanks(int n, std::chrono::milliseconds limit,
                             const std::function<int(int rank)>& body) {
  std::fflush(nullptr);
  std::vector<pid_t> pids(n, -1);
  for (int r = 0; r < n; ++r) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int code = 0;
      try {
        code = body(r);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "rank %d threw: %s\n", r, e.what());
        code = kChildThrew;
      } catch (...) {
        std::fprintf(stderr, "rank %d threw a non-standard exception\n", r);
        code = kChildThrewUnknown;
      }
      std::fflush(nullptr);
      ::_exit(code);
    }
    if (pid < 0) {
      for (int k = 0; k < r; ++k) ::kill(pids[k], SIGKILL);
      for (int k = 0; k < r; ++k) ::waitpid(pids[k], nullptr, 0);
      return "fork failed for rank " + std::to_string(r);
    }
    pids[r] = pid;
  }
  std::string report;
  auto add = [&report](const std::string& line) { report += (report.empty() ? "" : "; ") + line; };
  auto deadline = std::chrono::steady_clock::now() + limit;
  int left = n;
  while (left > 0) {
    bool reaped = false;
    for (int r = 0; r < n; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      if (::waitpid(pids[r], &status, WNOHANG) != pids[r]) continue;
      pids[r] = -1;
      --left;
      reaped = true;
      if (WIFSIGNALED(status)) {
        add("rank " + std::to_string(r) + " killed by signal " + std::to_string(WTERMSIG(status)));
      } else if (WEXITSTATUS(status) != 0) {
        add("rank " + std::to_string(r) + " exited with code " + std::to_string(WEXITSTATUS(status)));
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      for (int r = 0; r < n; ++r) {
        if (pids[r] < 0) continue;
        ::kill(pids[r], SIGKILL);
        ::waitpid(pids[r], nullptr, 0);
        add("rank " + std::to_string(r) + " still running after " +
            std::to_string(limit.count()) + " ms: killed");
      }
      break;
    }
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return report;
}

// A fresh private directory under /tmp (for file stores); removed by removeTree.
inline std::string makeTempDir(const char* stem) {
  std::string templ = std::string("/tmp/") + stem + ".XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) return "";
  return std::string(buf.data());
}

inline void removeTree(const std::string& dir) {
  if (dir.rfind("/tmp/", 0) != 0) return;  // never anything else
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace smddp::test
