// SPDX-License-Identifier: Apache-2.0
// The server half of the TCP store: one listener thread running a poll() loop over the listening
// socket, a wake-up pipe and every client connection. GETs of absent keys park the connection
// until the key is set or the request's own timeout passes (then it answers kNotFound), so clients
// never poll the network.
//
// Nothing a client sends can crash, hang or bloat it (docs/SECURITY.md):
// - a connection must complete the handshake (store_wire.h; with a job secret, the
//   challenge-response) within limits.handshake of its accept, else it is closed; at most
//   maxHandshaking connections may be in the handshake at once (the oldest goes first);
// - a connection holds at most one frame in its input, and a frame that stops arriving for `stall`
//   is dropped; a ready connection idle for `idle` is closed (the client reconnects on its own);
// - a client whose replies are not yet sent is not read from: queued replies share the stored
//   values (no copy), so a client that never reads costs one reference, not a value per request;
// - stored keys and bytes are capped (maxKeys, maxStoredBytes: a SET beyond fails);
// - connections are capped (maxConnections and the process's descriptor limit: the longest idle
//   ready connection is closed to admit a new one); accept() out of descriptors drops the
//   connection at once (a reserve descriptor) and backs off instead of spinning;
// - a parked GET whose client went away is released at once (POLLRDHUP).
// Invariants: the thread is the only owner of the key map and of every client fd; a client that
// misbehaves loses only its own connection; the destructor stops the thread and closes every fd.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "store/store_wire.h"

namespace smddp::store {

struct ServerStats {
  size_t connections = 0;
  size_t handshaking = 0;
  size_t parked = 0;
  size_t keys = 0;
  size_t storedBytes = 0;
  size_t queuedBytes = 0;    // reply bytes not yet sent (values shared with the map counted once per reply)
  uint64_t dropped = 0;      // connections closed for a protocol violation, a deadline or a cap
  uint64_t refused = 0;      // handshakes refused: no secret, wrong secret, other version
};

// The bounds above; tests shrink them.
struct ServerLimits {
  std::chrono::milliseconds handshake{2000};
  std::chrono::milliseconds stall{10000};
  std::chrono::milliseconds idle{120000};
  size_t maxHandshaking = 128;
  size_t maxConnections = 4096;
  size_t maxKeys = size_t{1} << 20;
  size_t maxStoredBytes = size_t{1} << 30;
};

class TcpStoreServer {
 public:

  // Binds host:port (port 0: any free port) and starts serving. A loopback host is bound as is;
  // any other host binds the wildcard address so that remote ranks can reach it. A non-empty
  // `secret` makes every client prove it holds the same one.
  TcpStoreServer(const std::string& host, int port, std::string secret = {},
                 ServerLimits limits = {});
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }
  ServerStats stats() const;  // as of the loop's last turn

 private:
  enum class Phase { kHello, kProof, kReady };
  using Value = std::shared_ptr<const std::string>;
  struct Conn {
    Phase phase = Phase::kHello;
    std::string peer;  // "address:port", for log lines
    std::string in;    // at most one frame
    std::deque<Value> out;
    size_t outOffset = 0;  // sent bytes of out.front()
    bool closeWhenSent = false;  // a refused handshake: its verdict goes out, then the close
    std::string dropWhy;  // why handleInput() gave up on it (for the log line); "" while it serves
    bool refused = false;           // ... and whether that was a refused handshake
    bool waiting = false;  // a GET parked until its key is set or its deadline passes
    std::string waitKey;
    Clock::time_point waitDeadline;
    Clock::time_point accepted;
    Clock::time_point lastProgress;
    std::string nonce;        // ours
    std::string clientNonce;  // theirs
  };

  void run();
  int pollTimeoutMs(Clock::time_point now) const;
  void acceptClients();
  bool admit();
  bool readFrom(int fd, Conn& c);
  bool handleInput(Conn& c);
  bool handleHello(Conn& c);
  bool handleProof(Conn& c);
  bool handleFrame(Conn& c);
  void handleRequest(Conn& c, const RequestHeader& h, std::string key, std::string value);
  void reply(Conn& c, WireStatus status, const std::string& payload);
  void replyValue(Conn& c, const Value& value);
  bool flush(int fd, Conn& c);
  void wakeWaiters(const std::string& key);
  void enforceDeadlines(Clock::time_point now);
  void drop(int fd, const std::string& why, bool refusedHandshake = false);
  void warnClosed(const std::string& peer, const std::string& why);
  void publishStats();
  void closeAll();

  std::string secret_;
  ServerLimits limits_;
  int listenFd_ = -1;
  int wakeRead_ = -1;
  int wakeWrite_ = -1;
  int reserveFd_ = -1;  // released to accept-and-close when out of descriptors
  int port_ = 0;
  Clock::time_point acceptPausedUntil_{};
  std::map<int, Conn> conns_;
  std::map<std::string, Value> data_;
  size_t storedBytes_ = 0;
  uint64_t dropped_ = 0;
  uint64_t refused_ = 0;
  Clock::time_point lastWarn_{};
  uint64_t unwarned_ = 0;
  std::atomic<size_t> statConnections_{0}, statHandshaking_{0}, statParked_{0}, statKeys_{0},
      statStored_{0}, statQueued_{0};
  std::atomic<uint64_t> statDropped_{0}, statRefused_{0};
  std::thread thread_;
};

}  // namespace smddp::store
