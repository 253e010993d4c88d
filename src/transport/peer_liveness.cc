// SPDX-License-Identifier: Apache-2.0
// PeerLiveness: pidfds, or kill(pid, 0) plus /proc/<pid>/stat (a zombie answers kill, but has
// exited); pids only of our pid namespace (peer_liveness.h).
#include "transport/peer_liveness.h"

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <string>

#include "common/logging.h"

namespace smddp::transport {
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

// The kernel's boot id ("76db360e-e586-4d71-aa3a-8399477aca84"), "" unless it reads as one.
std::string bootId() {
  FILE* f = std::fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f == nullptr) return "";
  char buf[64] = {0};
  const size_t n = std::fread(buf, 1, sizeof(buf) - 1, f);
  std::fclose(f);
  std::string id(buf, n);
  while (!id.empty() && id.back() == '\n') id.pop_back();
  if (id.size() != 36) return "";
  for (char c : id) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return "";
  }
  return id;
}

}  // namespace

// Not cached: a child forked after its parent's unshare(CLONE_NEWPID) is in another namespace.
std::string processNamespace() {
  struct stat st {};
  const std::string boot = bootId();
  // /proc/self is this process whichever pid namespace /proc was mounted for.
  if (boot.empty() || ::stat("/proc/self/ns/pid", &st) != 0) return "";
  return boot + "/" + std::to_string(static_cast<unsigned long long>(st.st_dev)) + ":" +
         std::to_string(static_cast<unsigned long long>(st.st_ino));
}

bool pidWatchable(const PeerInfo& peer, const std::string& host, const std::string& ns) {
  return peer.pid > 0 && peer.host == host && !ns.empty() && peer.pidNamespace == ns;
}

PeerLiveness::PeerLiveness(const std::vector<PeerInfo>& peers, int rank) {
  const std::string ns = processNamespace();
  const std::string host = hostName();
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) == rank || !pidWatchable(peers[r], host, ns)) continue;
    if (!exists(peers[r].pid)) continue;  // not alive now: nothing to watch
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

bool PeerLiveness::watches(int rank) const {
  return std::find(watched_.begin(), watched_.end(), rank) != watched_.end();
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

}  // namespace smddp::transport
