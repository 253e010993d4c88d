// Signature hashing and text (see mismatch.h). An FNV-style word hash of the fields, folded to the
// tag's width.
#include "core/mismatch.h"

#include <cstring>

#include "common/tag.h"

namespace smddp::core {
namespace {

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

// One multiply per field (not per byte): this runs once per collective on the caller's thread.
void mix(uint64_t& h, uint64_t value) {
  h ^= value;
  h *= kFnvPrime;
  h ^= h >> 29;
}

// Text without the trailing " [algorithm]" part.
std::string callOf(const std::string& text) {
  const size_t bracket = text.find(" [");
  return bracket == std::string::npos ? text : text.substr(0, bracket);
}

}  // namespace

Signature Signature::of(const algo::CollectiveDesc& desc) { return of(desc, desc.algorithm); }

Signature Signature::of(const algo::CollectiveDesc& desc, const char* algorithm) {
  Signature s;
  s.kind = desc.kind;
  s.dtype = desc.dtype;
  s.count = desc.count;
  s.op = desc.op;
  s.root = desc.root;
  s.algorithm = algorithm;
  return s;
}

uint16_t signatureHash(const Signature& sig) {
  uint64_t h = kFnvOffset;
  mix(h, static_cast<uint64_t>(sig.kind));
  if (sig.kind != CollectiveKind::kBarrier) {
    mix(h, static_cast<uint64_t>(sig.dtype));
    mix(h, sig.count);
  }
  if (sig.kind == CollectiveKind::kAllReduce) mix(h, static_cast<uint64_t>(sig.op));
  if (sig.kind == CollectiveKind::kBroadcast) mix(h, static_cast<uint64_t>(sig.root));
  if (sig.algorithm != nullptr) {
    for (const char* c = sig.algorithm; *c != '\0'; ++c) mix(h, static_cast<unsigned char>(*c));
  }
  const uint64_t folded = h ^ (h >> 12) ^ (h >> 24) ^ (h >> 36) ^ (h >> 48);
  return static_cast<uint16_t>(folded & tag::kSigMask);
}

std::string signatureText(const Signature& sig) {
  std::string s = std::string(toString(sig.kind)) + "(";
  if (sig.kind != CollectiveKind::kBarrier) {
    s += std::string(toString(sig.dtype)) + ", " + std::to_string(sig.count);
    if (sig.kind == CollectiveKind::kAllReduce) s += ", " + std::string(toString(sig.op));
    if (sig.kind == CollectiveKind::kBroadcast) s += ", root=" + std::to_string(sig.root);
  }
  return s + ")";
}

std::string signatureWithAlgorithm(const Signature& sig) {
  return signatureText(sig) + " [" + (sig.algorithm != nullptr ? sig.algorithm : "local") + "]";
}

std::string mismatchText(int rank, const std::string& mine, int peer, const std::string& theirs) {
  const bool sameCall = callOf(mine) == callOf(theirs);
  return "rank " + std::to_string(rank) + " called " + (sameCall ? mine : callOf(mine)) +
         " but rank " + std::to_string(peer) + " called " + (sameCall ? theirs : callOf(theirs));
}

}  // namespace smddp::core
