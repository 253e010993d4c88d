// SPDX-License-Identifier: Apache-2.0
// createTransport: a loopback fabric's endpoint when the request carries one, else libfabric.
#include "transport/factory.h"

#include "smddp/error.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/ofi/bootstrap.h"

namespace smddp::transport {

std::unique_ptr<Transport> createTransport(const TransportRequest& request) {
  if (request.loopback) {
    if (request.rank < 0 || request.rank >= request.loopback->size()) {
      throw Error(ErrorCode::kInvalidArgument,
                  "createTransport: rank " + std::to_string(request.rank) +
                      " out of range for a loopback fabric of " +
                      std::to_string(request.loopback->size()) + " ranks");
    }
    return request.loopback->endpoint(request.rank);
  }
  if (request.store == nullptr || request.config == nullptr) {
    throw Error(ErrorCode::kInvalidArgument,
                "createTransport: rank " + std::to_string(request.rank) +
                    ": a libfabric transport needs a store and a config");
  }
  return createOfiTransport(*request.store, request.prefix, request.rank, request.size,
                            *request.config, request.provider, request.timeout);
}

}  // namespace smddp::transport
