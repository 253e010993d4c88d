// SPDX-License-Identifier: Apache-2.0
// TcpStore: the client half of the TCP store (the server half is tcp_store_server.h). One
// connection per store object, one request at a time under a mutex, so the store is thread-safe.
// Invariants: every request is bounded (get: its timeout plus kIoGrace; set/add: kIoGrace); after
// a failed or timed-out exchange the connection is dropped and re-opened by the next request, so
// a late reply can never be read as the answer to a later request; a reply is checked against its
// request (status, length) before its payload is read or anything is allocated for it.
#include <poll.h>
#include <unistd.h>

#include <memory>
#include <mutex>

#include "common/auth.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "store/backoff.h"
#include "store/prefix_store.h"
#include "store/store_wire.h"
#include "store/tcp_store_server.h"

namespace smddp {
namespace store {

class TcpStore : public Store {
 public:
  TcpStore(const std::string& host, int port, bool isServer, std::chrono::milliseconds timeout,
           std::string secret)
      : host_(host), port_(port), connectTimeout_(timeout), secret_(std::move(secret)) {
    if (isServer) {
      server_ = std::make_unique<TcpStoreServer>(host, port, secret_);
      port_ = server_->port();
      if (host_.empty() || host_ == "0.0.0.0" || host_ == "::") host_ = "127.0.0.1";
    }
    if (port_ <= 0 || port_ > 65535) {
      throw Error(ErrorCode::kInvalidArgument,
                  "tcp store: client needs a port in 1..65535, got " + std::to_string(port));
    }
    connect(Clock::now() + connectTimeout_);
  }

  ~TcpStore() override {
    if (fd_ >= 0) ::close(fd_);  // before the server stops, so it sees an orderly close
    server_.reset();
  }

  void set(const std::string& key, const std::string& value) override {
    request(WireOp::kSet, key, value, 0, Clock::now() + kIoGrace, "set");
  }

  std::string get(const std::string& key, std::chrono::milliseconds timeout) override {
    auto [status, payload] = request(WireOp::kGet, key, "", std::max<int64_t>(timeout.count(), 0),
                                     Clock::now() + timeout + kGetGrace, "get");
    if (status == WireStatus::kNotFound) {
      throw Error(ErrorCode::kStore, where() + ": key '" + key + "' not set after " +
                                         std::to_string(timeout.count()) + " ms");
    }
    return payload;
  }

  int64_t add(const std::string& key, int64_t delta) override {
    auto reply = request(WireOp::kAdd, key, "", delta, Clock::now() + kIoGrace, "add");
    if (reply.second.size() != 8) {
      throw Error(ErrorCode::kStore, where() + ": add('" + key + "'): malformed reply");
    }
    return getI64(reply.second.data());
  }

  int port() const { return port_; }

 private:
  static constexpr std::chrono::seconds kIoGrace{30};
  // A get is bounded by its caller's timeout: the server answers by then (with the value or "not
  // found"), so only transit time is added. A longer grace let a failing collective's diagnostics
  // hang on a store host cut off by the network.
  static constexpr std::chrono::seconds kGetGrace{2};

  std::string where() const {
    return "tcp store " + host_ + ":" + std::to_string(port_);
  }

  std::pair<WireStatus, std::string> request(WireOp op, const std::string& key,
                                             const std::string& value, int64_t arg,
                                             Clock::time_point deadline, const char* name) {
    if (key.size() > kMaxKey || value.size() > kMaxValue) {
      throw Error(ErrorCode::kInvalidArgument,
                  where() + ": " + name + "('" + key.substr(0, 64) + "'): key of " +
                      std::to_string(key.size()) + " B or value of " +
                      std::to_string(value.size()) + " B exceeds the protocol limits");
    }
    // Every step, the wait for another thread's request included, ends by `deadline`: a store
    // host that became unreachable must not hold a failing collective far past its own bound.
    std::unique_lock<std::timed_mutex> lock(mu_, deadline);
    std::string what = where() + ": " + name + "('" + key + "')";
    if (!lock.owns_lock()) throw Error(ErrorCode::kStore, what + ": store busy past the deadline");
    if (fd_ >= 0 && !quiet(fd_)) {
      ::close(fd_);  // closed by the server (idle) or holding bytes nobody asked for
      fd_ = -1;
    }
    // A connection kept from an earlier request may be closed by the server's idle timeout just
    // as this one is sent: cut before any reply byte, the request was not served, and it goes
    // once more on a fresh connection.
    for (bool reused = fd_ >= 0;; reused = false) {
      if (fd_ < 0) connect(std::min(Clock::now() + connectTimeout_, deadline));
      bool replied = false;
      try {
        return exchange(op, key, value, arg, deadline, what, replied);
      } catch (const Error& e) {
        ::close(fd_);  // the stream may hold a partial exchange: never reuse it
        fd_ = -1;
        if (!reused || replied || dynamic_cast<const ConnectionCut*>(&e) == nullptr) throw;
      }
    }
  }

  // One request and its reply on fd_; `replied` once any reply byte arrived.
  std::pair<WireStatus, std::string> exchange(WireOp op, const std::string& key,
                                              const std::string& value, int64_t arg,
                                              Clock::time_point deadline, const std::string& what,
                                              bool& replied) {
    char header[kReplyHeader];
    bool ok = sendAll(fd_, encodeRequest(op, key, value, arg), deadline, what) &&
              recvAll(fd_, header, sizeof(header), deadline, what);
    if (!ok) throw Error(ErrorCode::kStore, what + ": no reply from the server in time");
    replied = true;
    const uint32_t length = getU32(header + 1);
    const std::string bad = checkReplyHeader(op, static_cast<uint8_t>(header[0]), length);
    if (!bad.empty()) throw Error(ErrorCode::kStore, what + ": malformed reply (" + bad + ")");
    std::string payload(length, '\0');
    if (!recvAll(fd_, payload.data(), payload.size(), deadline, what)) {
      throw Error(ErrorCode::kStore, what + ": no reply from the server in time");
    }
    auto status = static_cast<WireStatus>(header[0]);
    if (status == WireStatus::kFailed) throw Error(ErrorCode::kStore, what + ": " + payload);
    return {status, std::move(payload)};
  }

  // Opens the connection and completes the handshake; fd_ stays -1 when either fails. A
  // connection cut in the handshake (a flooded server sheds its oldest handshakes) is tried again
  // until the deadline.
  void connect(Clock::time_point deadline) {
    Backoff backoff(std::chrono::milliseconds(1), std::chrono::milliseconds(100));
    for (;;) {
      int fd = connectWithRetry(host_, port_, deadline);
      try {
        clientHandshake(fd, secret_, deadline, where());
        fd_ = fd;
        return;
      } catch (const ConnectionCut&) {
        ::close(fd);
        if (!backoff.sleepUntil(deadline)) throw;
      } catch (...) {
        ::close(fd);
        throw;
      }
    }
  }

  // True when nothing is waiting on an idle connection: no bytes, no close from the server.
  static bool quiet(int fd) {
    pollfd p{fd, POLLIN | POLLRDHUP, 0};
    return ::poll(&p, 1, 0) == 0;
  }

  std::string host_;
  int port_;
  std::chrono::milliseconds connectTimeout_;
  std::string secret_;
  std::unique_ptr<TcpStoreServer> server_;
  std::timed_mutex mu_;
  int fd_ = -1;
};

}  // namespace store

std::shared_ptr<Store> makeTcpStore(const std::string& host, int port, bool isServer,
                                    std::chrono::milliseconds connectTimeout,
                                    const std::string& jobSecret) {
  return std::make_shared<store::TcpStore>(host, port, isServer, connectTimeout, jobSecret);
}

std::shared_ptr<Store> makeTcpStore(const std::string& host, int port, bool isServer,
                                    std::chrono::milliseconds connectTimeout) {
  return makeTcpStore(host, port, isServer, connectTimeout, auth::configuredJobSecret());
}

int tcpStorePort(const Store& s) {
  if (auto* tcp = dynamic_cast<const store::TcpStore*>(&s)) return tcp->port();
  if (auto* prefix = dynamic_cast<const store::PrefixStore*>(&s)) return tcpStorePort(prefix->inner());
  return -1;
}

}  // namespace smddp
