// SPDX-License-Identifier: Apache-2.0
// The test NCCL's wire: every rank of a communicator connected to every other by a Unix socket
// in the abstract namespace ("smddp-testnccl-<name>-<rank>", so nothing is left on disk), and one
// primitive over it: exchange(), which sends a list of messages to and receives a list from
// every peer at once (poll()-driven, so two ranks writing large messages to each other never
// deadlock). Each message carries its length; a message of another length than the receive
// expects, a peer that closed, a peer that is silent: the exchange waits, as a real NCCL's
// kernel would, until `stop` says the communicator was aborted (then it returns false).
// Invariant: per ordered pair, messages are taken in the order they were sent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace smddp::testnccl {

using Stop = std::function<bool()>;

struct Outgoing {
  int peer;
  const void* data;
  size_t bytes;
};
struct Incoming {
  int peer;
  void* data;
  size_t bytes;
};

class Mesh {
 public:
  Mesh() = default;
  ~Mesh();
  Mesh(const Mesh&) = delete;
  Mesh& operator=(const Mesh&) = delete;

  // Connects rank `rank` of `size` to the others of communicator `name`; false with *why when
  // stop() turned true or `timeoutMs` passed first.
  bool connect(const std::string& name, int rank, int size, const Stop& stop, int timeoutMs,
               std::string* why);
  // Sends every outgoing and receives every incoming message, concurrently; false when stop()
  // turned true first (what was received is then incomplete).
  bool exchange(const std::vector<Outgoing>& out, const std::vector<Incoming>& in, const Stop& stop);
  int rank() const { return rank_; }
  int size() const { return size_; }

 private:
  int rank_ = 0;
  int size_ = 0;
  std::vector<int> fds_;  // by peer; -1 for this rank
};

}  // namespace smddp::testnccl
