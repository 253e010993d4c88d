// SPDX-License-Identifier: Apache-2.0
// Encoding and bounded blocking socket I/O for the TCP store (format in store_wire.h).
// Invariant: no call here waits past its deadline; SIGPIPE is never raised (MSG_NOSIGNAL).
#include "store/store_wire.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "smddp/error.h"
#include "store/backoff.h"

namespace smddp::store {

void putU32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}
void putI64(std::string& out, int64_t v) {
  auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out += static_cast<char>((u >> (8 * i)) & 0xff);
}
uint32_t getU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
int64_t getI64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return static_cast<int64_t>(v);
}

std::string encodeRequest(WireOp op, const std::string& key, const std::string& value, int64_t arg) {
  std::string out;
  out.reserve(kRequestHeader + key.size() + value.size());
  out += static_cast<char>(op);
  putU32(out, static_cast<uint32_t>(key.size()));
  putU32(out, static_cast<uint32_t>(value.size()));
  putI64(out, arg);
  out += key;
  out += value;
  return out;
}

std::string encodeReply(WireStatus status, const std::string& payload) {
  std::string out;
  out += static_cast<char>(status);
  putU32(out, static_cast<uint32_t>(payload.size()));
  out += payload;
  return out;
}

namespace {

// Waits for `events` on fd until the deadline; false on timeout.
bool waitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() < 0) return false;
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count() + 1, 1000)));
    if (rc > 0) return true;
    if (rc < 0 && errno != EINTR) return true;  // let the following call report the error
  }
}

}  // namespace

bool sendAll(int fd, const std::string& data, Clock::time_point deadline, const std::string& what) {
  size_t off = 0;
  while (off < data.size()) {
    if (!waitFd(fd, POLLOUT, deadline)) return false;
    ssize_t n = ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      throw ConnectionCut(ErrorCode::kStore, what + ": the store server closed the connection");
    }
    if (n < 0) throw Error(ErrorCode::kStore, what + ": send failed: " + std::strerror(errno));
    off += static_cast<size_t>(n);
  }
  return true;
}

bool recvAll(int fd, char* data, size_t bytes, Clock::time_point deadline, const std::string& what) {
  size_t off = 0;
  while (off < bytes) {
    if (!waitFd(fd, POLLIN, deadline)) return false;
    ssize_t n = ::recv(fd, data + off, bytes - off, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (n < 0 && errno == ECONNRESET) {
      throw ConnectionCut(ErrorCode::kStore, what + ": the store server reset the connection");
    }
    if (n < 0) throw Error(ErrorCode::kStore, what + ": receive failed: " + std::strerror(errno));
    if (n == 0) throw ConnectionCut(ErrorCode::kStore, what + ": the store server closed the connection");
    off += static_cast<size_t>(n);
  }
  return true;
}

namespace {

// One connection attempt over every address of host; returns fd or -1 with `error` set.
int tryConnect(const std::string& host, int port, std::string& error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (rc != 0) {
    error = std::string("getaddrinfo: ") + gai_strerror(rc);
    return -1;
  }
  int fd = -1;
  for (addrinfo* ai = res; ai != nullptr && fd < 0; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      fd = -1;
    }
  }
  ::freeaddrinfo(res);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  }
  return fd;
}

}  // namespace

int connectWithRetry(const std::string& host, int port, Clock::time_point deadline) {
  Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(200));
  std::string error = "no attempt made";
  do {
    int fd = tryConnect(host, port, error);
    if (fd >= 0) return fd;
  } while (backoff.sleepUntil(deadline));
  throw Error(ErrorCode::kStore, "tcp store: cannot connect to " + host + ":" +
                                     std::to_string(port) + " before the connect timeout (" +
                                     error + ")");
}

}  // namespace smddp::store
