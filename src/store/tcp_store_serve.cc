// SPDX-License-Identifier: Apache-2.0
// TcpStoreServer: one connection's protocol, the handshake, requests and replies (the loop and
// the limits around it are in tcp_store_server.cc).
#include <sys/socket.h>

#include <cerrno>

#include "common/auth.h"
#include "store/tcp_store_server.h"

namespace smddp::store {
namespace {

constexpr size_t kReadChunk = 1 << 20;  // per connection and turn: one client cannot starve others

}  // namespace

// Reads what the current step needs and no more: the input never holds more than one frame.
// False when the client is gone.
bool TcpStoreServer::readFrom(int fd, Conn& c) {
  size_t budget = kReadChunk;
  while (budget > 0) {
    size_t want = 0;
    if (c.phase == Phase::kHello) {
      want = kClientHello - c.in.size();
    } else if (c.phase == Phase::kProof) {
      want = kProof - c.in.size();
    } else if (c.in.size() < kRequestHeader) {
      want = kRequestHeader - c.in.size();
    } else {
      RequestHeader h;
      std::string why;
      if (!decodeRequestHeader(c.in.data(), h, why)) return true;  // handleInput() drops it
      want = kRequestHeader + h.keyBytes + h.valueBytes - c.in.size();
    }
    if (want == 0) return true;
    want = std::min(want, budget);
    const size_t had = c.in.size();
    c.in.resize(had + want);
    ssize_t n = ::recv(fd, c.in.data() + had, want, MSG_DONTWAIT);
    c.in.resize(had + static_cast<size_t>(std::max<ssize_t>(n, 0)));
    if (n > 0) {
      c.lastProgress = Clock::now();
      budget -= static_cast<size_t>(n);
      // A complete header may reveal a frame body still to come; a complete step is served first.
      if (c.phase != Phase::kReady || c.in.size() >= kRequestHeader) return true;
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0 && errno == EINTR) continue;
    return false;  // orderly close or reset
  }
  return true;
}

// Serves what the input completes; false (with dropWhy) to close the connection.
bool TcpStoreServer::handleInput(Conn& c) {
  switch (c.phase) {
    case Phase::kHello:
      return c.in.size() < kClientHello || handleHello(c);
    case Phase::kProof:
      return c.in.size() < kProof || handleProof(c);
    case Phase::kReady:
      return c.in.size() < kRequestHeader || handleFrame(c);
  }
  return false;
}

bool TcpStoreServer::handleHello(Conn& c) {
  ClientHello hello;
  std::string why;
  if (!decodeClientHello(c.in.data(), hello, why)) {
    c.dropWhy = why;  // "not an smddp store handshake (first bytes '...')"
    return false;
  }
  c.in.clear();
  ServerHello answer;
  answer.flags = secret_.empty() ? 0 : kFlagSecret;
  if (hello.version != kProtocolVersion) {
    answer.verdict = HelloVerdict::kVersion;
  } else if (!secret_.empty() && (hello.flags & kFlagSecret) == 0) {
    answer.verdict = HelloVerdict::kSecretRequired;
  }
  if (answer.verdict != HelloVerdict::kOk) {
    // The verdict goes out, then the connection closes: the client can say what went wrong.
    warnClosed(c.peer, answer.verdict == HelloVerdict::kVersion
                           ? "it speaks store protocol version " + std::to_string(hello.version) +
                                 ", this server " + std::to_string(kProtocolVersion)
                           : std::string("it does not hold the job secret (SMDDP_JOB_SECRET)"));
    c.out.push_back(std::make_shared<const std::string>(encodeServerHello(answer)));
    c.closeWhenSent = true;
    ++refused_;
    return true;
  }
  if (!secret_.empty()) {
    c.nonce = auth::randomBytes(kNonce);
    c.clientNonce = hello.nonce;
    answer.nonce = c.nonce;
    answer.proof = auth::proof(secret_, "server", c.nonce, c.clientNonce);
    c.phase = Phase::kProof;
  } else {
    c.phase = Phase::kReady;
  }
  c.out.push_back(std::make_shared<const std::string>(encodeServerHello(answer)));
  return true;
}

bool TcpStoreServer::handleProof(Conn& c) {
  const bool ok = auth::sameProof(c.in.substr(0, kProof),
                                  auth::proof(secret_, "client", c.clientNonce, c.nonce));
  c.in.clear();
  const char verdict = static_cast<char>(ok ? HelloVerdict::kOk : HelloVerdict::kBadProof);
  c.out.push_back(std::make_shared<const std::string>(1, verdict));
  if (!ok) {
    c.closeWhenSent = true;
    ++refused_;
    warnClosed(c.peer, "its proof of the job secret is wrong (another job's process?)");
    return true;
  }
  c.phase = Phase::kReady;
  return true;
}

bool TcpStoreServer::handleFrame(Conn& c) {
  RequestHeader h;
  std::string why;
  if (!decodeRequestHeader(c.in.data(), h, why)) {
    c.dropWhy = "a malformed request: " + why;
    return false;
  }
  const size_t total = kRequestHeader + h.keyBytes + h.valueBytes;
  if (c.in.size() < total) return true;
  std::string key = c.in.substr(kRequestHeader, h.keyBytes);
  std::string value = c.in.substr(kRequestHeader + h.keyBytes, h.valueBytes);
  c.in.clear();
  c.in.shrink_to_fit();  // a 64 MiB frame's buffer does not stay with an idle connection
  handleRequest(c, h, std::move(key), std::move(value));
  return true;
}

void TcpStoreServer::handleRequest(Conn& c, const RequestHeader& h, std::string key,
                                   std::string value) {
  if (h.op == WireOp::kSet) {
    auto it = data_.find(key);
    const size_t old = it == data_.end() ? 0 : it->second->size() + key.size();
    const size_t after = storedBytes_ - old + key.size() + value.size();
    if ((it == data_.end() && data_.size() >= limits_.maxKeys) || after > limits_.maxStoredBytes) {
      reply(c, WireStatus::kFailed,
            "the store is full (" + std::to_string(data_.size()) + " keys, " +
                std::to_string(storedBytes_) + " B; limits " + std::to_string(limits_.maxKeys) +
                " keys, " + std::to_string(limits_.maxStoredBytes) + " B)");
      return;
    }
    storedBytes_ = after;
    data_[key] = std::make_shared<const std::string>(std::move(value));
    reply(c, WireStatus::kOk, "");
    wakeWaiters(key);
  } else if (h.op == WireOp::kGet) {
    auto it = data_.find(key);
    if (it != data_.end()) {
      replyValue(c, it->second);
    } else if (h.arg <= 0) {
      reply(c, WireStatus::kNotFound, "");
    } else {
      c.waiting = true;
      c.waitKey = std::move(key);
      c.waitDeadline = Clock::now() + std::chrono::milliseconds(std::min(h.arg, kMaxWaitMs));
    }
  } else {
    auto it = data_.find(key);
    int64_t current = 0;
    if (it != data_.end()) {
      char* end = nullptr;
      errno = 0;
      const std::string& text = *it->second;
      current = std::strtoll(text.c_str(), &end, 10);
      if (text.empty() || errno != 0 || *end != '\0') {
        reply(c, WireStatus::kFailed, "value of '" + key.substr(0, 64) + "' is not an integer");
        return;
      }
    } else if (data_.size() >= limits_.maxKeys) {
      reply(c, WireStatus::kFailed, "the store is full (" + std::to_string(data_.size()) + " keys)");
      return;
    }
    int64_t result = 0;
    if (__builtin_add_overflow(current, h.arg, &result)) {
      reply(c, WireStatus::kFailed, "add(" + std::to_string(h.arg) + ") to " +
                                        std::to_string(current) + " overflows");
      return;
    }
    auto text = std::make_shared<const std::string>(std::to_string(result));
    storedBytes_ += text->size() + (it == data_.end() ? key.size() : 0);
    storedBytes_ -= it == data_.end() ? 0 : it->second->size();
    data_[key] = text;
    std::string payload;
    putI64(payload, result);
    reply(c, WireStatus::kOk, payload);
    wakeWaiters(key);
  }
}

void TcpStoreServer::reply(Conn& c, WireStatus status, const std::string& payload) {
  c.out.push_back(std::make_shared<const std::string>(encodeReply(status, payload)));
}

// A large value is queued by reference: many unread replies of one value cost one copy. A small
// one goes out with its header in one piece (one segment, no wait on the peer's delayed ACK).
void TcpStoreServer::replyValue(Conn& c, const Value& value) {
  constexpr size_t kCopyUpTo = 64 * 1024;
  std::string head(1, static_cast<char>(WireStatus::kOk));
  putU32(head, static_cast<uint32_t>(value->size()));
  if (value->size() <= kCopyUpTo) head += *value;
  c.out.push_back(std::make_shared<const std::string>(std::move(head)));
  if (value->size() > kCopyUpTo) c.out.push_back(value);
}

// Parked GETs for key get their answer; their replies go out on the next POLLOUT (or at once).
void TcpStoreServer::wakeWaiters(const std::string& key) {
  const Value& value = data_[key];
  for (auto& [fd, c] : conns_) {
    if (c.waiting && c.waitKey == key) {
      c.waiting = false;
      replyValue(c, value);
      flush(fd, c);
    }
  }
}

// Writes what the socket takes now; the rest waits for POLLOUT. False when the client is gone.
bool TcpStoreServer::flush(int fd, Conn& c) {
  while (!c.out.empty()) {
    const std::string& piece = *c.out.front();
    ssize_t n = ::send(fd, piece.data() + c.outOffset, piece.size() - c.outOffset,
                       MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    if (n < 0) return false;
    c.outOffset += static_cast<size_t>(n);
    if (c.outOffset == piece.size()) {
      c.out.pop_front();
      c.outOffset = 0;
    }
  }
  return true;
}

}  // namespace smddp::store
