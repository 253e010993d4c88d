// SPDX-License-Identifier: Apache-2.0
// The server half of the TCP store: one listener thread running a poll() loop over the listening
// socket, a wake-up pipe and every client connection. GETs of absent keys park the connection
// until the key is set or the request's own timeout passes (then it answers kNotFound), so clients
// never poll the network.
// Invariants: the thread is the only owner of the key map and of every client fd; a client that
// disconnects or sends a malformed frame loses only its own connection; the destructor stops the
// thread and closes every fd before it returns.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <thread>

#include "store/store_wire.h"

namespace smddp::store {

class TcpStoreServer {
 public:
  // Binds host:port (port 0: any free port) and starts serving. A loopback host is bound as is;
  // any other host binds the wildcard address so that remote ranks can reach it.
  TcpStoreServer(const std::string& host, int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  int port() const { return port_; }

 private:
  struct Conn {
    std::string in;
    std::string out;
    bool waiting = false;  // a GET parked until its key is set or its deadline passes
    std::string waitKey;
    Clock::time_point waitDeadline;
  };

  void run();
  int pollTimeoutMs() const;
  void acceptClients();
  bool readFrom(int fd, Conn& c);
  bool handleInput(int fd, Conn& c);
  void handleRequest(Conn& c, WireOp op, const std::string& key, std::string value, int64_t arg);
  bool flush(int fd, Conn& c);
  void wakeWaiters(const std::string& key);
  void expireWaiters();
  void closeAll();

  static constexpr size_t kMaxClients = 4096;

  int listenFd_ = -1;
  int wakeRead_ = -1;
  int wakeWrite_ = -1;
  int port_ = 0;
  std::map<int, Conn> conns_;
  std::map<std::string, std::string> data_;
  std::thread thread_;
};

}  // namespace smddp::store
