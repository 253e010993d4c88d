// SPDX-License-Identifier: Apache-2.0
// TcpStoreServer: admission and deadlines, what keeps hostile clients from holding the server
// (the bounds are listed in tcp_store_server.h), and the rate-limited log of what was closed.
#include <unistd.h>

#include <vector>

#include "common/logging.h"
#include "store/tcp_store_server.h"

namespace smddp::store {

// Makes room for one more connection by closing the oldest handshake (when too many are in the
// handshake) or the longest idle ready one (at the connection cap). False when nothing can go.
bool TcpStoreServer::admit() {
  size_t handshaking = 0;
  auto oldestHandshake = conns_.end();
  auto idlest = conns_.end();
  for (auto it = conns_.begin(); it != conns_.end(); ++it) {
    const Conn& c = it->second;
    if (c.phase != Phase::kReady) {
      ++handshaking;
      if (oldestHandshake == conns_.end() || c.accepted < oldestHandshake->second.accepted) {
        oldestHandshake = it;
      }
    } else if (!c.waiting && c.out.empty() && c.in.empty() &&
               (idlest == conns_.end() || c.lastProgress < idlest->second.lastProgress)) {
      idlest = it;
    }
  }
  if (handshaking >= limits_.maxHandshaking && oldestHandshake != conns_.end()) {
    drop(oldestHandshake->first, "too many connections in the handshake");
  } else if (conns_.size() >= limits_.maxConnections) {
    if (idlest == conns_.end()) return false;
    drop(idlest->first, "the connection cap was reached (idle connection closed)");
  }
  return true;
}

void TcpStoreServer::enforceDeadlines(Clock::time_point now) {
  std::vector<std::pair<int, const char*>> late;
  for (auto& [fd, c] : conns_) {
    if (c.waiting && now >= c.waitDeadline) {
      c.waiting = false;
      reply(c, WireStatus::kNotFound, "");
      if (!flush(fd, c)) late.emplace_back(fd, nullptr);
    } else if (c.phase != Phase::kReady && now >= c.accepted + limits_.handshake) {
      late.emplace_back(fd, "no handshake in time");
    } else if (c.phase == Phase::kReady && !c.in.empty() && now >= c.lastProgress + limits_.stall) {
      late.emplace_back(fd, "a partial request stalled");
    } else if (c.phase == Phase::kReady && !c.waiting && c.out.empty() &&
               now >= c.lastProgress + limits_.idle) {
      late.emplace_back(fd, nullptr);  // idle: the client reconnects when it needs the store
    }
  }
  for (auto [fd, why] : late) {
    if (why != nullptr) {
      drop(fd, why);
    } else {
      ::close(fd);
      conns_.erase(fd);
    }
  }
}

// Closes a misbehaving connection, with a log line (see warnClosed()).
void TcpStoreServer::drop(int fd, const std::string& why, bool refusedHandshake) {
  auto it = conns_.find(fd);
  if (it == conns_.end()) return;
  ++(refusedHandshake ? refused_ : dropped_);
  warnClosed(it->second.peer, why);
  ::close(fd);
  conns_.erase(it);
}

// WARNs at most once a second: a flood of bad clients must not flood the log.
void TcpStoreServer::warnClosed(const std::string& peer, const std::string& why) {
  const auto now = Clock::now();
  if (now - lastWarn_ < std::chrono::seconds(1)) {
    ++unwarned_;
    return;
  }
  SMDDP_WARN(-1, "tcp store server: closed the connection of " << peer << ": " << why
                     << (unwarned_ > 0 ? " (and " + std::to_string(unwarned_) +
                                             " more connections closed since the last report)"
                                       : ""));
  lastWarn_ = now;
  unwarned_ = 0;
}

}  // namespace smddp::store
