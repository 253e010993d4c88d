// SPDX-License-Identifier: Apache-2.0
// TcpStoreServer: the listener, the poll() loop, admission and deadlines (see tcp_store_server.h).
// Each connection's protocol is in tcp_store_serve.cc.
#include "store/tcp_store_server.h"

#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/logging.h"
#include "smddp/helper_thread.h"
#include "smddp/error.h"

namespace smddp::store {
namespace {

bool isLoopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(sa);
    return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
  }
  if (sa->sa_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(sa);
    return IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr);
  }
  return false;
}

[[noreturn]] void fail(const std::string& host, int port, const std::string& what) {
  throw Error(ErrorCode::kStore, "tcp store server " + host + ":" + std::to_string(port) + ": " +
                                     what + " failed: " + std::strerror(errno));
}

// Binds and listens; returns the fd and the bound port.
int openListener(const std::string& host, int port, int& boundPort) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const char* node = host.empty() ? nullptr : host.c_str();
  int rc = ::getaddrinfo(node, std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    throw Error(ErrorCode::kStore, "tcp store server: cannot resolve '" + host + "': " +
                                       gai_strerror(rc));
  }
  sockaddr_storage addr{};
  socklen_t len = res->ai_addrlen;
  std::memcpy(&addr, res->ai_addr, len);
  ::freeaddrinfo(res);
  if (!isLoopback(reinterpret_cast<sockaddr*>(&addr))) {
    if (addr.ss_family == AF_INET) {
      reinterpret_cast<sockaddr_in*>(&addr)->sin_addr.s_addr = htonl(INADDR_ANY);
    } else {
      reinterpret_cast<sockaddr_in6*>(&addr)->sin6_addr = in6addr_any;
    }
  }
  int fd = ::socket(addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) fail(host, port, "socket");
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) != 0 || ::listen(fd, 1024) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    fail(host, port, "bind/listen");
  }
  sockaddr_storage bound{};
  socklen_t blen = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &blen);
  boundPort = ntohs(bound.ss_family == AF_INET
                        ? reinterpret_cast<sockaddr_in*>(&bound)->sin_port
                        : reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port);
  return fd;
}

// "address:port" of an accepted peer.
std::string describePeer(const sockaddr_storage& sa) {
  char ip[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (sa.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&sa);
    ::inet_ntop(AF_INET, &in->sin_addr, ip, sizeof(ip));
    port = ntohs(in->sin_port);
  } else if (sa.ss_family == AF_INET6) {
    auto* in6 = reinterpret_cast<const sockaddr_in6*>(&sa);
    ::inet_ntop(AF_INET6, &in6->sin6_addr, ip, sizeof(ip));
    port = ntohs(in6->sin6_port);
  }
  return std::string(ip) + ":" + std::to_string(port);
}

// What a refused client sent beyond its hello, read and dropped before the close: closing over
// unread bytes resets the connection, and the reset can overtake the verdict sent just before.
void discardInput(int fd) {
  char scratch[4096];
  for (int reads = 0; reads < 16; ++reads) {
    if (::recv(fd, scratch, sizeof(scratch), MSG_DONTWAIT) <= 0) return;
  }
}

int64_t msUntil(Clock::time_point t, Clock::time_point now) {
  return std::max<int64_t>(
      0, std::chrono::duration_cast<std::chrono::milliseconds>(t - now).count() + 1);
}

}  // namespace

TcpStoreServer::TcpStoreServer(const std::string& host, int port, std::string secret,
                               ServerLimits limits)
    : secret_(std::move(secret)), limits_(limits) {
  listenFd_ = openListener(host, port, port_);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_NONBLOCK | O_CLOEXEC) != 0) {
    ::close(listenFd_);
    fail(host, port, "pipe");
  }
  wakeRead_ = pipeFds[0];
  wakeWrite_ = pipeFds[1];
  reserveFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Leave room for the rest of the process (its endpoints, files): a quarter of the descriptors.
  rlimit nofile{};
  if (::getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur != RLIM_INFINITY) {
    limits_.maxConnections =
        std::clamp<size_t>(nofile.rlim_cur * 3 / 4, 16, limits_.maxConnections);
  }
  thread_ = startHelperThread("smddp-store", [this] { run(); });
}

TcpStoreServer::~TcpStoreServer() {
  char byte = 1;
  while (::write(wakeWrite_, &byte, 1) < 0 && errno == EINTR) {
  }
  thread_.join();
  closeAll();
}

void TcpStoreServer::closeAll() {
  for (auto& [fd, c] : conns_) ::close(fd);
  conns_.clear();
  for (int* fd : {&listenFd_, &wakeRead_, &wakeWrite_, &reserveFd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

ServerStats TcpStoreServer::stats() const {
  ServerStats s;
  s.connections = statConnections_.load();
  s.handshaking = statHandshaking_.load();
  s.parked = statParked_.load();
  s.keys = statKeys_.load();
  s.storedBytes = statStored_.load();
  s.queuedBytes = statQueued_.load();
  s.dropped = statDropped_.load();
  s.refused = statRefused_.load();
  return s;
}

void TcpStoreServer::publishStats() {
  size_t handshaking = 0, parked = 0, queued = 0;
  for (const auto& [fd, c] : conns_) {
    handshaking += c.phase != Phase::kReady;
    parked += c.waiting;
    for (const auto& v : c.out) queued += v->size();
    queued -= std::min(queued, c.outOffset);
  }
  statConnections_ = conns_.size();
  statHandshaking_ = handshaking;
  statParked_ = parked;
  statKeys_ = data_.size();
  statStored_ = storedBytes_;
  statQueued_ = queued;
  statDropped_ = dropped_;
  statRefused_ = refused_;
}

int TcpStoreServer::pollTimeoutMs(Clock::time_point now) const {
  int64_t best = 1000;
  if (acceptPausedUntil_ > now) best = std::min(best, msUntil(acceptPausedUntil_, now));
  for (const auto& [fd, c] : conns_) {
    if (c.waiting) best = std::min(best, msUntil(c.waitDeadline, now));
    if (c.phase != Phase::kReady) {
      best = std::min(best, msUntil(c.accepted + limits_.handshake, now));
    } else if (!c.waiting && c.out.empty()) {
      best = std::min(best, msUntil(c.lastProgress + (c.in.empty() ? limits_.idle : limits_.stall), now));
    }
  }
  return static_cast<int>(best);
}

void TcpStoreServer::run() {
  std::vector<pollfd> fds;
  for (;;) {
    const auto now = Clock::now();
    fds.clear();
    fds.push_back({wakeRead_, POLLIN, 0});
    fds.push_back({listenFd_, static_cast<short>(acceptPausedUntil_ > now ? 0 : POLLIN), 0});
    for (const auto& [fd, c] : conns_) {
      // Read only a connection with nothing to answer: a client that does not read its replies
      // is not read either. A parked one is watched for its peer's close alone.
      short events = POLLRDHUP;
      if (!c.waiting && c.out.empty() && !c.closeWhenSent) events |= POLLIN;
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({fd, events, 0});
    }
    int rc = ::poll(fds.data(), fds.size(), pollTimeoutMs(now));
    if (rc < 0 && errno != EINTR) {
      SMDDP_WARN(-1, "tcp store server: poll failed: " << std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;  // shutdown
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = conns_.find(fds[i].fd);
      if (it == conns_.end()) continue;
      Conn& c = it->second;
      bool ok = true;
      if ((fds[i].revents & (POLLHUP | POLLERR)) ||
          ((fds[i].revents & POLLRDHUP) && !(fds[i].revents & POLLIN))) {
        ok = false;  // gone (a parked GET's client included)
      }
      if (ok && (fds[i].revents & POLLIN)) ok = readFrom(it->first, c) && handleInput(c);
      if (ok) ok = flush(it->first, c);
      if (ok && c.closeWhenSent && c.out.empty()) {
        discardInput(it->first);
        ok = false;
      }
      if (!ok && !c.dropWhy.empty()) {
        drop(it->first, c.dropWhy, c.refused);
      } else if (!ok) {
        ::close(it->first);
        conns_.erase(it);
      }
    }
    // After the connections: a descriptor closed above and reused by accept() must not be
    // mistaken for the one the poll results describe.
    if (fds[1].revents & POLLIN) acceptClients();
    enforceDeadlines(Clock::now());
    publishStats();
  }
}

void TcpStoreServer::acceptClients() {
  for (int accepted = 0; accepted < 256; ++accepted) {
    sockaddr_storage sa{};
    socklen_t len = sizeof(sa);
    int fd = ::accept4(listenFd_, reinterpret_cast<sockaddr*>(&sa), &len,
                       SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED) return;
      if ((errno == EMFILE || errno == ENFILE) && reserveFd_ >= 0) {
        // Out of descriptors: take the waiting connection with the reserve one and close it, so
        // the backlog does not keep poll() awake, then back off.
        ::close(reserveFd_);
        int victim = ::accept4(listenFd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (victim >= 0) ::close(victim);
        reserveFd_ = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
        ++dropped_;
      }
      acceptPausedUntil_ = Clock::now() + std::chrono::milliseconds(50);
      return;
    }
    const auto now = Clock::now();
    if (!admit()) {
      ++dropped_;
      ::close(fd);
      continue;
    }
    int one = 1;  // replies are whole; none waits for the peer's ACK of the previous one
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Conn c;
    c.peer = describePeer(sa);
    c.accepted = c.lastProgress = now;
    conns_.emplace(fd, std::move(c));
  }
}

}  // namespace smddp::store
