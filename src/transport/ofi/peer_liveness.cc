// SPDX-License-Identifier: Apache-2.0
// PeerLiveness: kill(pid, 0) plus /proc/<pid>/stat (a zombie answers kill, but has exited).
#include "transport/ofi/peer_liveness.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>

#include "common/logging.h"

namespace smddp::transport::ofi {
namespace {

bool exists(int pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// A pidfd for pid (readable once the process exited), or -1.
int openPidfd(int pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

// Exited but not yet reaped by its parent: state Z (zombie) or X (dead) in /proc/<pid>/stat.
bool isZombie(int pid) {
  std::string path = "/proc/" + std::to_string(pid) + "/stat";
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return false;
  char buf[512] = {0};
  size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string stat(buf, n);
  size_t close = stat.rfind(')');  // the command name may itself hold spaces or ')'
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state == 'Z' || state == 'X';
}

}  // namespace

PeerLiveness::PeerLiveness(const std::vector<PeerInfo>& peers, int rank) {
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == rank || peers[r].host != hostName() || peers[r].pid <= 0) continue;
    if (!exists(peers[r].pid)) continue;  // another pid namespace: cannot watch
    watched_.push_back(static_cast<int>(r));
    pids_.push_back(peers[r].pid);
    pidfds_.push_back(openPidfd(peers[r].pid));
  }
  next_ = std::chrono::steady_clock::now() + kInterval;
}

PeerLiveness::~PeerLiveness() {
  for (int fd : pidfds_) {
    if (fd >= 0) ::close(fd);
  }
}

void PeerLiveness::forget(size_t i) {
  if (pidfds_[i] >= 0) ::close(pidfds_[i]);
  const auto at = static_cast<std::ptrdiff_t>(i);
  watched_.erase(watched_.begin() + at);
  pids_.erase(pids_.begin() + at);
  pidfds_.erase(pidfds_.begin() + at);
}

int PeerLiveness::check() {
  if (watched_.empty()) return -1;
  auto now = std::chrono::steady_clock::now();
  if (now < next_) return -1;
  next_ = now + kInterval;
  std::vector<pollfd> fds(pidfds_.size());
  for (size_t i = 0; i < fds.size(); ++i) fds[i] = {pidfds_[i], POLLIN, 0};  // fd -1: ignored
  const bool polled = ::poll(fds.data(), fds.size(), 0) >= 0;
  for (size_t i = 0; i < watched_.size(); ++i) {
    const bool dead = pidfds_[i] >= 0 ? polled && (fds[i].revents & (POLLIN | POLLHUP)) != 0
                                      : !exists(pids_[i]) || isZombie(pids_[i]);
    if (!dead) continue;
    const int rank = watched_[i];
    forget(i);
    next_ = now;  // the others are checked at the next call
    return rank;
  }
  return -1;
}

}  // namespace smddp::transport::ofi
