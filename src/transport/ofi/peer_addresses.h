// SPDX-License-Identifier: Apache-2.0
// Peers' endpoint addresses, as read from the bootstrap store, checked before libfabric sees them.
// fi_av_insert reads as many bytes as the provider's address format says, whatever the buffer
// holds (a sockaddr_in: 16; shm: up to the NUL): a truncated, oversized or garbage entry would be
// read past its end or mapped as some other endpoint. So an address is inserted only when its
// length and shape are what the endpoint's own format allows.
// Invariant: insertPeerAddress never hands libfabric an address that addressProblem() refused.
#pragma once

#include <rdma/fabric.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "transport/ofi/endpoint.h"

namespace smddp::transport::ofi {

constexpr size_t kMaxStringAddress = 256;  // FI_ADDR_STR (shm: SMR_NAME_MAX), NUL included

// What is wrong with `theirs` as an address of format `format`, next to this endpoint's own
// address `own` (whose length binary formats must share): "" when nothing, else a phrase naming
// the length found and the provider's ("5 bytes where the provider's addresses (sockaddr_in) are
// 16 bytes").
std::string addressProblem(uint32_t format, const std::string& own, const std::string& theirs);

// The address rank `peer` published, checked, then inserted into ep's address vector; its
// fi_addr_t. A refused address is an Error(kStore) naming `rank`, `peer` and the problem; a
// failed fi_av_insert an Error(kTransport).
fi_addr_t insertPeerAddress(Endpoint& ep, const std::string& provider, const std::string& addr,
                            int rank, int peer);

// The IP address in an address of format `format` (sockaddr_in / _in6); "" otherwise.
std::string ipOf(uint32_t format, const std::string& addr);

}  // namespace smddp::transport::ofi
