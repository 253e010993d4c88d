// SPDX-License-Identifier: Apache-2.0
// The one door to a transport: core asks for the transport of one communicator and the factory
// picks the implementation (libfabric, or one rank's endpoint of an in-process loopback fabric).
// Invariant: nothing above transport/ names an implementation or its creator, and nothing here
// includes libfabric (ofi/bootstrap.h declares the libfabric creator without it).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "transport/transport.h"

namespace smddp {
class Store;
struct Config;
}  // namespace smddp

namespace smddp::transport {

class LoopbackFabric;

struct TransportRequest {
  // The rendezvous of the ranks: libfabric publishes "<prefix>/host/<rank>" and
  // "<prefix>/addr/<rank>" there and reads every peer's.
  Store* store = nullptr;
  std::string prefix;
  int rank = 0;
  int size = 1;
  const Config* config = nullptr;
  // A provider ("shm", "tcp", "net", "efa", ...), or "" for the choice of config and topology
  // (ofi/provider_profile.h: chooseProvider).
  std::string provider;
  // Bounds the whole bootstrap: the communicator's resolved timeout.
  std::chrono::milliseconds timeout{0};
  // Set: this rank's endpoint of an in-process fabric (tests); nothing else above is read.
  std::shared_ptr<LoopbackFabric> loopback;
};

// The transport of one rank of one communicator. Throws Error(kInvalidArgument) for a request
// that names no store or config (libfabric) or a rank outside [0, size), and the
// implementation's Error (the provider's error string) when it cannot be opened.
std::unique_ptr<Transport> createTransport(const TransportRequest& request);

}  // namespace smddp::transport
