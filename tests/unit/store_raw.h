// SPDX-License-Identifier: Apache-2.0
// Raw sockets for the TCP store's hostile-client tests: what a scanner, a stray client or a
// foreign process can do to a port (127.0.0.1 only), and the process's memory and descriptors.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "store/store_wire.h"

namespace smddp::store::testing {

inline int rawConnect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline bool sendRaw(int fd, const std::string& bytes) {
  return ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(bytes.size());
}

// Reads up to `bytes` within `ms`; returns what came ("" and closed=true once the peer closed).
inline std::string recvSome(int fd, size_t bytes, int ms, bool* closed = nullptr) {
  std::string out;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  if (closed) *closed = false;
  while (out.size() < bytes) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) break;
    char buf[4096];
    ssize_t n = ::recv(fd, buf, std::min(sizeof(buf), bytes - out.size()), 0);
    if (n <= 0) {
      if (closed) *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A connection through the handshake without a secret; -1 when it did not complete.
inline int rawReady(int port) {
  int fd = rawConnect(port);
  if (fd < 0) return -1;
  ClientHello hello;
  hello.nonce = std::string(kNonce, 'n');
  if (!sendRaw(fd, encodeClientHello(hello)) || recvSome(fd, kServerHello, 2000).size() != kServerHello) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline size_t residentBytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return static_cast<size_t>(resident) * static_cast<size_t>(::sysconf(_SC_PAGESIZE));
}

inline int openDescriptors() {
  int n = 0;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (::readdir(d) != nullptr) ++n;
    ::closedir(d);
  }
  return n - 2;  // . and ..
}

}  // namespace smddp::store::testing
