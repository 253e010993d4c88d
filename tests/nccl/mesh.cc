// SPDX-License-Identifier: Apache-2.0
// The test NCCL's wire (mesh.h).
#include "mesh.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

namespace smddp::testnccl {
namespace {

using Clock = std::chrono::steady_clock;

sockaddr_un addressOf(const std::string& name, int rank, socklen_t* len) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  const std::string path = "smddp-testnccl-" + name + "-" + std::to_string(rank);
  std::memcpy(a.sun_path + 1, path.data(), std::min(path.size(), sizeof(a.sun_path) - 2));
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 +
                                std::min(path.size(), sizeof(a.sun_path) - 2));
  return a;
}

bool writeAll(int fd, const void* data, size_t bytes) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

bool readAll(int fd, void* data, size_t bytes) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    const ssize_t n = ::recv(fd, p, bytes, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    p += n;
    bytes -= static_cast<size_t>(n);
  }
  return true;
}

void setNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Mesh::~Mesh() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

bool Mesh::connect(const std::string& name, int rank, int size, const Stop& stop, int timeoutMs,
                   std::string* why) {
  rank_ = rank;
  size_ = size;
  fds_.assign(static_cast<size_t>(size), -1);
  if (size == 1) return true;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeoutMs);
  const int listener = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  socklen_t len = 0;
  sockaddr_un self = addressOf(name, rank, &len);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&self), len) != 0 ||
      ::listen(listener, size) != 0) {
    *why = std::string("test NCCL: cannot listen: ") + std::strerror(errno);
    if (listener >= 0) ::close(listener);
    return false;
  }
  setNonBlocking(listener);
  int missing = size - 1;
  int next = 0;  // the lower rank to connect to next
  while (missing > 0) {
    if (stop() || Clock::now() > deadline) {
      *why = stop() ? "test NCCL: aborted while connecting" : "test NCCL: peers did not connect";
      ::close(listener);
      return false;
    }
    if (next < rank) {  // connect to every lower rank; higher ones connect to us
      const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
      socklen_t plen = 0;
      sockaddr_un peer = addressOf(name, next, &plen);
      if (::connect(fd, reinterpret_cast<sockaddr*>(&peer), plen) == 0) {
        const int32_t me = rank;
        if (writeAll(fd, &me, sizeof(me))) {
          fds_[static_cast<size_t>(next)] = fd;
          ++next;
          --missing;
          continue;
        }
      }
      ::close(fd);
    }
    const int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) {
      int32_t who = -1;
      if (readAll(fd, &who, sizeof(who)) && who > rank && who < size &&
          fds_[static_cast<size_t>(who)] < 0) {
        fds_[static_cast<size_t>(who)] = fd;
        --missing;
      } else {
        ::close(fd);
      }
      continue;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ::close(listener);
  for (int fd : fds_) {
    if (fd >= 0) setNonBlocking(fd);
  }
  return true;
}

bool Mesh::exchange(const std::vector<Outgoing>& out, const std::vector<Incoming>& in,
                    const Stop& stop) {
  struct Send {
    uint64_t header;
    const char* data;
    size_t bytes;
    size_t done = 0;  // of header + data
  };
  struct Recv {
    char* data;
    size_t bytes;
    uint64_t header = 0;
    size_t done = 0;
  };
  const auto n = static_cast<size_t>(size_);
  std::vector<std::vector<Send>> sends(n);
  std::vector<std::vector<Recv>> recvs(n);
  std::vector<size_t> sendAt(n, 0), recvAt(n, 0);
  std::vector<bool> stuck(n, false);  // a peer gone or a message of the wrong size: wait
  for (const auto& o : out) {
    sends[static_cast<size_t>(o.peer)].push_back({o.bytes, static_cast<const char*>(o.data), o.bytes});
  }
  for (const auto& i : in) {
    recvs[static_cast<size_t>(i.peer)].push_back({static_cast<char*>(i.data), i.bytes});
  }
  constexpr size_t kHeader = sizeof(uint64_t);
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<size_t> peers;
    for (size_t q = 0; q < n; ++q) {
      short events = 0;
      if (sendAt[q] < sends[q].size()) events |= POLLOUT;
      if (recvAt[q] < recvs[q].size() && !stuck[q]) events |= POLLIN;
      if (events != 0 && fds_[q] >= 0) {
        fds.push_back({fds_[q], events, 0});
        peers.push_back(q);
      }
    }
    bool pendingWork = false;
    for (size_t q = 0; q < n; ++q) {
      pendingWork = pendingWork || sendAt[q] < sends[q].size() || recvAt[q] < recvs[q].size();
    }
    if (!pendingWork) return true;
    if (stop()) return false;
    if (fds.empty()) {  // only stuck work left: wait as a kernel would, until aborted
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      continue;
    }
    if (::poll(fds.data(), fds.size(), 10) < 0 && errno != EINTR) return false;
    for (size_t k = 0; k < fds.size(); ++k) {
      const size_t q = peers[k];
      const int fd = fds[k].fd;
      if ((fds[k].revents & POLLOUT) != 0 && sendAt[q] < sends[q].size()) {
        Send& s = sends[q][sendAt[q]];
        const char* from;
        size_t left;
        if (s.done < kHeader) {
          from = reinterpret_cast<const char*>(&s.header) + s.done;
          left = kHeader - s.done;
        } else {
          from = s.data + (s.done - kHeader);
          left = s.bytes - (s.done - kHeader);
        }
        const ssize_t w = left > 0 ? ::send(fd, from, left, MSG_NOSIGNAL) : 0;
        if (w > 0) s.done += static_cast<size_t>(w);
        if (w < 0 && errno != EAGAIN && errno != EINTR) stuck[q] = true;  // peer gone
        if (s.done == kHeader + s.bytes) ++sendAt[q];
      }
      if ((fds[k].revents & (POLLIN | POLLHUP | POLLERR)) != 0 && recvAt[q] < recvs[q].size() &&
          !stuck[q]) {
        Recv& r = recvs[q][recvAt[q]];
        char* to;
        size_t left;
        if (r.done < kHeader) {
          to = reinterpret_cast<char*>(&r.header) + r.done;
          left = kHeader - r.done;
        } else {
          to = r.data + (r.done - kHeader);
          left = r.bytes - (r.done - kHeader);
        }
        const ssize_t got = left > 0 ? ::recv(fd, to, left, 0) : 0;
        if (got == 0 && left > 0) stuck[q] = true;  // closed: the peer is gone
        if (got < 0 && errno != EAGAIN && errno != EINTR) stuck[q] = true;
        if (got > 0) r.done += static_cast<size_t>(got);
        if (r.done == kHeader && r.header != r.bytes) {
          std::fprintf(stderr,
                       "smddp test NCCL: rank %d expected %zu bytes from rank %zu, which sent "
                       "%llu: waits, as NCCL would, until aborted\n",
                       rank_, r.bytes, q, static_cast<unsigned long long>(r.header));
          stuck[q] = true;
        }
        if (!stuck[q] && r.done == kHeader + r.bytes) ++recvAt[q];
      }
    }
  }
}

}  // namespace smddp::testnccl
