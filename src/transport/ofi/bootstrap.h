// SPDX-License-Identifier: Apache-2.0
// The libfabric transport's creator (bootstrap.cc), declared without libfabric's headers so that
// the factory (transport/factory.h) can call it; everything else creates transports through the
// factory.
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

// Creates the libfabric transport for one communicator: picks the provider (config and topology),
// opens fabric/domain/endpoint, publishes this rank's address in the store under
// "<prefix>/addr/<r>" and inserts every peer's; the whole bootstrap is bounded by `timeout` (the
// communicator's resolved bound). Throws Error with the provider's error string on failure.
std::unique_ptr<Transport> createOfiTransport(Store& store, const std::string& prefix, int rank,
                                              int size, const Config& config,
                                              const std::string& providerOverride,
                                              std::chrono::milliseconds timeout);

}  // namespace smddp::transport
