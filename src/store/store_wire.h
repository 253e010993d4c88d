// SPDX-License-Identifier: Apache-2.0
// Wire format of the TCP store, shared by client and server, plus socket helpers.
//
// Handshake, once per connection, before any request:
//   client hello  [magic 8 "SMDDPstr"][version u16][flags u16][zero u32][client nonce 16]  (32 B)
//   server hello  [magic 8][version u16][flags u16][verdict u8][zero 3][server nonce 16]
//                 [server proof 32]                                                       (64 B)
//   with a job secret on the server (flag kSecret): client proof [32], server verdict [u8].
//   flags bit 0 (kSecret): the sender holds a job secret. The proofs are auth::proof().
//   A server that gets anything else first (an HTTP probe, a scanner's bytes, an old client)
//   closes the connection; one that gets another version answers kVersion with its own version.
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

#include "smddp/error.h"
#include "store/limits.h"

namespace smddp::store {

enum class WireOp : uint8_t { kSet = 1, kGet = 2, kAdd = 3 };
enum class WireStatus : uint8_t { kOk = 0, kNotFound = 1, kFailed = 2 };

enum class HelloVerdict : uint8_t { kOk = 0, kVersion = 1, kSecretRequired = 2, kBadProof = 3 };

constexpr char kMagic[8] = {'S', 'M', 'D', 'D', 'P', 's', 't', 'r'};
constexpr uint16_t kProtocolVersion = 2;  // 1: the headerless protocol of smddp 0.1
constexpr uint16_t kFlagSecret = 1;
constexpr size_t kClientHello = 32;
constexpr size_t kServerHello = 64;
constexpr size_t kNonce = 16;
constexpr size_t kProof = 32;

struct ClientHello {
  uint16_t version = kProtocolVersion;
  uint16_t flags = 0;
  std::string nonce;  // kNonce bytes
};
struct ServerHello {
  uint16_t version = kProtocolVersion;
  uint16_t flags = 0;
  HelloVerdict verdict = HelloVerdict::kOk;
  std::string nonce;  // kNonce bytes
  std::string proof;  // kProof bytes (zeros without a secret)
};

std::string encodeClientHello(const ClientHello& h);
std::string encodeServerHello(const ServerHello& h);
// Decoders of exactly kClientHello / kServerHello bytes: false (and `why`) when the bytes are not
// an smddp store hello (the magic), or hold an unknown verdict.
bool decodeClientHello(const char* p, ClientHello& out, std::string& why);
bool decodeServerHello(const char* p, ServerHello& out, std::string& why);

constexpr size_t kRequestHeader = 1 + 4 + 4 + 8;
constexpr size_t kReplyHeader = 1 + 4;
constexpr uint32_t kMaxFailureText = 4096;
constexpr int64_t kMaxWaitMs = 24LL * 3600 * 1000;  // a GET's timeout is clipped to a day

struct RequestHeader {
  WireOp op = WireOp::kSet;
  uint32_t keyBytes = 0;
  uint32_t valueBytes = 0;
  int64_t arg = 0;
};
// Decodes the kRequestHeader bytes at p; false (and `why`) for an unknown op or lengths beyond
// kMaxKey / kMaxValue, so nothing is allocated for a hostile frame.
bool decodeRequestHeader(const char* p, RequestHeader& out, std::string& why);

// Checks a reply header against the request it answers before its payload is read: the status
// must be one the op can get and the length within what that status carries (SET: 0; ADD: 8;
// GET: up to kMaxValue, 0 when not found; failures up to kMaxFailureText). "" when acceptable,
// else what is wrong.
std::string checkReplyHeader(WireOp op, uint8_t status, uint32_t length);

void putU32(std::string& out, uint32_t v);
void putI64(std::string& out, int64_t v);
uint32_t getU32(const char* p);
int64_t getI64(const char* p);

std::string encodeRequest(WireOp op, const std::string& key, const std::string& value, int64_t arg);
std::string encodeReply(WireStatus status, const std::string& payload);

using Clock = std::chrono::steady_clock;

// The peer closed or reset the connection (a server may drop a connection in its handshake when
// flooded: the client connects again).
struct ConnectionCut : Error {
  using Error::Error;
};

// Blocking I/O on a socket, each bounded by a deadline. Return false on timeout; throw
// ConnectionCut naming `what` when the peer closed the connection, Error(kStore) when the socket
// failed otherwise.
bool sendAll(int fd, const std::string& data, Clock::time_point deadline, const std::string& what);
bool recvAll(int fd, char* data, size_t bytes, Clock::time_point deadline, const std::string& what);

// Connects to host:port, retrying refused/unreachable attempts with back-off until the deadline
// (the server may start after its clients). Returns a blocking fd with TCP_NODELAY; throws on
// timeout with the last error.
int connectWithRetry(const std::string& host, int port, Clock::time_point deadline);

// The handshake from the client's side on a connected fd (with `secret`: the challenge-response).
// Throws Error(kStore) starting with `what` saying what went wrong: not an smddp store, another
// protocol version, a secret required or wrong, no answer by the deadline.
void clientHandshake(int fd, const std::string& secret, Clock::time_point deadline,
                     const std::string& what);

}  // namespace smddp::store
