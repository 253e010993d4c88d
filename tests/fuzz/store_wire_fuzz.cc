// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the TCP store's wire decoders (store_wire.h), the bytes any client or any process
// answering on a store's port sends: the handshakes, the request header, the reply header check,
// and a signed store value (signed_store.h). Decoding must never crash; what decodes must encode
// back to the same bytes (the magic and fields), and a request header that decodes must respect
// the limits, so nothing is ever allocated for a length beyond them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "store/signed_store.h"
#include "store/store_wire.h"

using namespace smddp::store;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  std::string why;
  if (size >= kClientHello) {
    ClientHello hello;
    if (decodeClientHello(bytes.data(), hello, why)) {
      const std::string again = encodeClientHello(hello);
      if (again.size() != kClientHello || again.compare(0, 12, bytes, 0, 12) != 0) std::abort();
    }
  }
  if (size >= kServerHello) {
    ServerHello hello;
    if (decodeServerHello(bytes.data(), hello, why)) {
      const std::string again = encodeServerHello(hello);
      if (again.size() != kServerHello || again.compare(0, 13, bytes, 0, 13) != 0) std::abort();
    }
  }
  if (size >= kRequestHeader) {
    RequestHeader h;
    if (decodeRequestHeader(bytes.data(), h, why)) {
      if (h.keyBytes > kMaxKey || h.valueBytes > kMaxValue) std::abort();
      if (h.op != WireOp::kSet && h.valueBytes != 0) std::abort();
    }
  }
  if (size >= 6) {
    const auto op = static_cast<WireOp>(1 + static_cast<uint8_t>(bytes[0]) % 3);
    const uint32_t length = getU32(bytes.data() + 2);
    if (checkReplyHeader(op, static_cast<uint8_t>(bytes[1]), length).empty() && length > kMaxValue) {
      std::abort();  // a reply the client would allocate for beyond the limit
    }
  }
  std::string value;
  const std::string secret = "fuzz-secret-0123456789";
  if (openValue(secret, "key", bytes, value, why)) {
    if (sealValue(secret, "key", value) != bytes) std::abort();
  }
  return 0;
}
