// SPDX-License-Identifier: Apache-2.0
// Pure encoders and decoders of the TCP store's handshake and frame headers (format in
// store_wire.h). No I/O: the fuzz target drives these directly.
#include <cstring>

#include "store/store_wire.h"

namespace smddp::store {
namespace {

void putU16(std::string& out, uint16_t v) {
  out += static_cast<char>(v & 0xff);
  out += static_cast<char>(v >> 8);
}
uint16_t getU16(const char* p) {
  return static_cast<uint16_t>(static_cast<unsigned char>(p[0]) |
                               (static_cast<unsigned char>(p[1]) << 8));
}

std::string fixed(const std::string& s, size_t bytes) {
  std::string out = s.substr(0, bytes);
  out.resize(bytes, '\0');
  return out;
}

bool magicOk(const char* p, std::string& why) {
  if (std::memcmp(p, kMagic, sizeof(kMagic)) == 0) return true;
  std::string shown;
  for (size_t i = 0; i < sizeof(kMagic); ++i) {
    auto c = static_cast<unsigned char>(p[i]);
    shown += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
  }
  why = "not an smddp store handshake (first bytes '" + shown + "')";
  return false;
}

}  // namespace

std::string encodeClientHello(const ClientHello& h) {
  std::string out(kMagic, sizeof(kMagic));
  putU16(out, h.version);
  putU16(out, h.flags);
  putU32(out, 0);
  out += fixed(h.nonce, kNonce);
  return out;
}

std::string encodeServerHello(const ServerHello& h) {
  std::string out(kMagic, sizeof(kMagic));
  putU16(out, h.version);
  putU16(out, h.flags);
  out += static_cast<char>(h.verdict);
  out.append(3, '\0');
  out += fixed(h.nonce, kNonce);
  out += fixed(h.proof, kProof);
  return out;
}

bool decodeClientHello(const char* p, ClientHello& out, std::string& why) {
  if (!magicOk(p, why)) return false;
  out.version = getU16(p + 8);
  out.flags = getU16(p + 10);
  out.nonce.assign(p + 16, kNonce);
  return true;
}

bool decodeServerHello(const char* p, ServerHello& out, std::string& why) {
  if (!magicOk(p, why)) return false;
  out.version = getU16(p + 8);
  out.flags = getU16(p + 10);
  const auto verdict = static_cast<uint8_t>(p[12]);
  if (verdict > static_cast<uint8_t>(HelloVerdict::kBadProof)) {
    why = "unknown handshake verdict " + std::to_string(verdict);
    return false;
  }
  out.verdict = static_cast<HelloVerdict>(verdict);
  out.nonce.assign(p + 16, kNonce);
  out.proof.assign(p + 16 + kNonce, kProof);
  return true;
}

bool decodeRequestHeader(const char* p, RequestHeader& out, std::string& why) {
  const auto op = static_cast<uint8_t>(p[0]);
  out.keyBytes = getU32(p + 1);
  out.valueBytes = getU32(p + 5);
  out.arg = getI64(p + 9);
  if (op < static_cast<uint8_t>(WireOp::kSet) || op > static_cast<uint8_t>(WireOp::kAdd)) {
    why = "unknown op " + std::to_string(op);
    return false;
  }
  out.op = static_cast<WireOp>(op);
  if (out.keyBytes > kMaxKey || out.valueBytes > kMaxValue) {
    why = "key of " + std::to_string(out.keyBytes) + " B or value of " +
          std::to_string(out.valueBytes) + " B beyond the limits (" + std::to_string(kMaxKey) +
          " B, " + std::to_string(kMaxValue) + " B)";
    return false;
  }
  if (out.op != WireOp::kSet && out.valueBytes != 0) {
    why = "a value with a GET or ADD";
    return false;
  }
  return true;
}

std::string checkReplyHeader(WireOp op, uint8_t status, uint32_t length) {
  const std::string got = "status " + std::to_string(status) + " with " + std::to_string(length) +
                          " B of payload";
  switch (static_cast<WireStatus>(status)) {
    case WireStatus::kOk:
      if (op == WireOp::kSet && length != 0) return "a SET answered with " + got;
      if (op == WireOp::kAdd && length != 8) return "an ADD answered with " + got;
      if (op == WireOp::kGet && length > kMaxValue) return "a GET answered with " + got;
      return "";
    case WireStatus::kNotFound:
      if (op != WireOp::kGet || length != 0) return "a request answered with " + got;
      return "";
    case WireStatus::kFailed:
      if (length > kMaxFailureText) return "a failure answered with " + got;
      return "";
  }
  return "unknown reply " + got;
}

}  // namespace smddp::store
