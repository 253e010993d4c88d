// SPDX-License-Identifier: Apache-2.0
// The liveness port and its probe (see liveness_probe.h).
#include "watch/liveness_probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>

namespace smddp::watch {
namespace {

struct Listener {
  std::mutex mutex;
  int fd = -1;
  int port = 0;
  pid_t owner = 0;  // the process that opened it: a forked child opens its own
};

Listener& listener() {
  static Listener* l = new Listener();  // never destroyed: beacon threads may outlive statics
  return *l;
}

// A listener on every address (dual-stack; IPv4 only where the kernel has no IPv6), ephemeral
// port; -1 on failure.
int openListener(int* port) {
  for (const int family : {AF_INET6, AF_INET}) {
    const int fd = ::socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) continue;
    sockaddr_storage addr{};
    socklen_t len = 0;
    if (family == AF_INET6) {
      int off = 0;
      ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off));
      auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
      a->sin6_family = AF_INET6;
      a->sin6_addr = in6addr_any;
      len = sizeof(*a);
    } else {
      auto* a = reinterpret_cast<sockaddr_in*>(&addr);
      a->sin_family = AF_INET;
      a->sin_addr.s_addr = htonl(INADDR_ANY);
      len = sizeof(*a);
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0 && ::listen(fd, 128) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      *port = ntohs(family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port
                                       : reinterpret_cast<sockaddr_in*>(&addr)->sin_port);
      return fd;
    }
    ::close(fd);
  }
  return -1;
}

}  // namespace

int livenessPort() {
  Listener& l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.owner != ::getpid()) {
    if (l.fd >= 0) ::close(l.fd);  // the parent's, inherited through fork: not this process's
    l.fd = openListener(&l.port);
    l.owner = ::getpid();
    if (l.fd < 0) l.port = 0;
  }
  return l.port;
}

void drainLivenessPort() {
  Listener& l = listener();
  std::lock_guard<std::mutex> lock(l.mutex);
  if (l.fd < 0 || l.owner != ::getpid()) return;
  for (int i = 0; i < 256; ++i) {
    const int c = ::accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (c < 0) break;
    ::close(c);
  }
}

bool probeableAddress(const std::string& ip) {
  in_addr v4{};
  if (::inet_pton(AF_INET, ip.c_str(), &v4) == 1) {
    const uint32_t host = ntohl(v4.s_addr);
    return host != 0 && (host >> 24) != 127;
  }
  in6_addr v6{};
  if (::inet_pton(AF_INET6, ip.c_str(), &v6) == 1) {
    return !IN6_IS_ADDR_LOOPBACK(&v6) && !IN6_IS_ADDR_UNSPECIFIED(&v6) &&
           !IN6_IS_ADDR_V4MAPPED(&v6);
  }
  return false;
}

Liveness probeLiveness(const std::string& ip, int port, std::chrono::milliseconds bound) {
  if (port <= 0 || port > 65535) return Liveness::kUnknown;
  sockaddr_storage addr{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v4);
  } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(*v6);
  } else {
    return Liveness::kUnknown;
  }
  const int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Liveness::kUnknown;
  int err = 0;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(bound.count()));
      socklen_t errLen = sizeof(err);
      if (ready == 1) {
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &errLen);
      } else {
        err = ETIMEDOUT;
      }
    }
  }
  ::close(fd);
  if (err == 0) return Liveness::kAlive;
  return err == ECONNREFUSED ? Liveness::kGone : Liveness::kUnknown;
}

}  // namespace smddp::watch
