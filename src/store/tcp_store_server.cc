// SPDX-License-Identifier: Apache-2.0
// TcpStoreServer: the poll() loop (see tcp_store_server.h for the invariants).
#include "store/tcp_store_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
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

}  // namespace

TcpStoreServer::TcpStoreServer(const std::string& host, int port) {
  listenFd_ = openListener(host, port, port_);
  int pipeFds[2];
  if (::pipe2(pipeFds, O_NONBLOCK | O_CLOEXEC) != 0) {
    ::close(listenFd_);
    fail(host, port, "pipe");
  }
  wakeRead_ = pipeFds[0];
  wakeWrite_ = pipeFds[1];
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
  for (int* fd : {&listenFd_, &wakeRead_, &wakeWrite_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
}

int TcpStoreServer::pollTimeoutMs() const {
  auto now = Clock::now();
  int64_t best = 1000;
  for (const auto& [fd, c] : conns_) {
    if (!c.waiting) continue;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(c.waitDeadline - now);
    best = std::min<int64_t>(best, std::max<int64_t>(0, left.count() + 1));
  }
  return static_cast<int>(best);
}

void TcpStoreServer::run() {
  std::vector<pollfd> fds;
  for (;;) {
    fds.clear();
    fds.push_back({wakeRead_, POLLIN, 0});
    fds.push_back({listenFd_, POLLIN, 0});
    for (const auto& [fd, c] : conns_) {
      short events = c.waiting ? 0 : POLLIN;  // a parked client sends nothing more
      if (!c.out.empty()) events |= POLLOUT;
      fds.push_back({fd, events, 0});
    }
    int rc = ::poll(fds.data(), fds.size(), pollTimeoutMs());
    if (rc < 0 && errno != EINTR) {
      SMDDP_WARN(-1, "tcp store server: poll failed: " << std::strerror(errno));
      return;
    }
    if (fds[0].revents != 0) return;  // shutdown
    if (fds[1].revents & POLLIN) acceptClients();
    for (size_t i = 2; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto it = conns_.find(fds[i].fd);
      if (it == conns_.end()) continue;
      bool ok = true;
      if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ok = readFrom(it->first, it->second);
      if (ok) ok = handleInput(it->first, it->second) && flush(it->first, it->second);
      if (!ok) {
        ::close(it->first);
        conns_.erase(it);
      }
    }
    expireWaiters();
  }
}

void TcpStoreServer::acceptClients() {
  for (;;) {
    int fd = ::accept4(listenFd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;  // EAGAIN: drained; anything else: try again on the next wake-up
    if (conns_.size() >= kMaxClients) {
      SMDDP_WARN(-1, "tcp store server: refusing a client beyond " << kMaxClients);
      ::close(fd);
      continue;
    }
    conns_[fd] = Conn{};
  }
}

// False when the client is gone.
bool TcpStoreServer::readFrom(int fd, Conn& c) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) {
      c.in.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;  // orderly close or reset
  }
}

// Serves every complete request in the input; false on a malformed frame.
bool TcpStoreServer::handleInput(int fd, Conn& c) {
  while (!c.waiting && c.in.size() >= kRequestHeader) {
    const char* p = c.in.data();
    auto op = static_cast<WireOp>(p[0]);
    uint32_t klen = getU32(p + 1);
    uint32_t vlen = getU32(p + 5);
    int64_t arg = getI64(p + 9);
    if (klen > kMaxKey || vlen > kMaxValue || op < WireOp::kSet || op > WireOp::kAdd) {
      SMDDP_WARN(-1, "tcp store server: dropping a client that sent a malformed frame (op "
                         << int(p[0]) << ", key " << klen << " B, value " << vlen << " B)");
      return false;
    }
    size_t total = kRequestHeader + klen + vlen;
    if (c.in.size() < total) return true;
    std::string key = c.in.substr(kRequestHeader, klen);
    std::string value = c.in.substr(kRequestHeader + klen, vlen);
    c.in.erase(0, total);
    handleRequest(c, op, key, std::move(value), arg);
  }
  return true;
}

void TcpStoreServer::handleRequest(Conn& c, WireOp op, const std::string& key, std::string value,
                                   int64_t arg) {
  if (op == WireOp::kSet) {
    data_[key] = std::move(value);
    c.out += encodeReply(WireStatus::kOk, "");
    wakeWaiters(key);
  } else if (op == WireOp::kGet) {
    auto it = data_.find(key);
    if (it != data_.end()) {
      c.out += encodeReply(WireStatus::kOk, it->second);
    } else if (arg <= 0) {
      c.out += encodeReply(WireStatus::kNotFound, "");
    } else {
      c.waiting = true;
      c.waitKey = key;
      c.waitDeadline = Clock::now() + std::chrono::milliseconds(arg);
    }
  } else {
    std::string& slot = data_[key];
    char* end = nullptr;
    errno = 0;
    long long current = slot.empty() ? 0 : std::strtoll(slot.c_str(), &end, 10);
    if (!slot.empty() && (errno != 0 || *end != '\0')) {
      c.out += encodeReply(WireStatus::kFailed, "value '" + slot + "' is not an integer");
      return;
    }
    int64_t result = static_cast<int64_t>(current) + arg;
    slot = std::to_string(result);
    std::string payload;
    putI64(payload, result);
    c.out += encodeReply(WireStatus::kOk, payload);
    wakeWaiters(key);
  }
}

// Parked GETs for key get their answer; their replies go out on the next POLLOUT (or at once).
void TcpStoreServer::wakeWaiters(const std::string& key) {
  const std::string& value = data_[key];
  for (auto& [fd, c] : conns_) {
    if (c.waiting && c.waitKey == key) {
      c.waiting = false;
      c.out += encodeReply(WireStatus::kOk, value);
      flush(fd, c);
    }
  }
}

void TcpStoreServer::expireWaiters() {
  auto now = Clock::now();
  for (auto& [fd, c] : conns_) {
    if (c.waiting && now >= c.waitDeadline) {
      c.waiting = false;
      c.out += encodeReply(WireStatus::kNotFound, "");
      flush(fd, c);
    }
  }
}

// Writes what the socket takes now; the rest waits for POLLOUT. False when the client is gone.
bool TcpStoreServer::flush(int fd, Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = ::send(fd, c.out.data(), c.out.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0) return false;
    c.out.erase(0, static_cast<size_t>(n));
  }
  return true;
}

}  // namespace smddp::store
