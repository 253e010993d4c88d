// SPDX-License-Identifier: Apache-2.0
// Wire format of the TCP store, shared by client and server, plus socket helpers.
//
// Request:  [op u8][key length u32][value length u32][arg i64][key][value]   (little-endian)
//           arg = timeout in ms for GET, delta for ADD, unused for SET.
// Reply:    [status u8][payload length u32][payload]
//           SET -> OK, empty; GET -> OK + value, or kNotFound once the timeout passed; ADD -> OK + i64.
// Invariant: lengths are checked against kMaxKey / kMaxValue before anything is allocated, so a
// corrupt or hostile frame cannot make either side allocate without bound.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "store/limits.h"

namespace smddp::store {

enum class WireOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };
enum class WireStatus : uint8_t { kOk = 0, kNotFound = 1, kFailed = 2 };

constexpr size_t kRequestHeader = 1 + 4 + 4 + 8;
constexpr size_t kReplyHeader = 1 + 4;

void putU32(std::string& out, uint32_t v);
void putI64(std::string& out, int64_t v);
uint32_t getU32(const char* p);
int64_t getI64(const char* p);

std::string encodeRequest(WireOp op, const std::string& key, const std::string& value, int64_t arg);
std::string encodeReply(WireStatus status, const std::string& payload);

using Clock = std::chrono::steady_clock;

// Blocking I/O on a socket, each bounded by a deadline. Return false on timeout; throw
// Error(kStore) naming `what` when the peer closed the connection or the socket failed.
bool sendAll(int fd, const std::string& data, Clock::time_point deadline, const std::string& what);
bool recvAll(int fd, char* data, size_t bytes, Clock::time_point deadline, const std::string& what);

// Connects to host:port, retrying refused/unreachable attempts with back-off until the deadline
// (the server may start after its clients). Returns a blocking fd with TCP_NODELAY; throws on
// timeout with the last error.
int connectWithRetry(const std::string& host, int port, Clock::time_point deadline);

}  // namespace smddp::store
