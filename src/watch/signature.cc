// SPDX-License-Identifier: Apache-2.0
// Signature hashing and text (see signature.h): shapeHash of the call, folded to the tag's width.
#include "watch/signature.h"

#include "common/tag.h"

namespace smddp::watch {
namespace {

// Text without the trailing " [algorithm]" part.
std::string callOf(const std::string& text) {
  const size_t bracket = text.find(" [");
  return bracket == std::string::npos ? text : text.substr(0, bracket);
}

}  // namespace

uint16_t foldSignature(uint64_t shape) {
  const uint64_t folded = shape ^ (shape >> 12) ^ (shape >> 24) ^ (shape >> 36) ^ (shape >> 48);
  return static_cast<uint16_t>(folded & tag::kSigMask);
}

uint16_t signatureHash(const Signature& sig) {
  return foldSignature(shapeHash(sig, algorithmNameHash(sig.algorithm)));
}

std::string signatureWithAlgorithm(const Signature& sig) {
  return callText(sig) + " [" + (sig.algorithm != nullptr ? sig.algorithm : "local") + "]";
}

std::string mismatchText(int rank, const std::string& mine, int peer, const std::string& theirs) {
  const bool sameCall = callOf(mine) == callOf(theirs);
  return "rank " + std::to_string(rank) + " called " + (sameCall ? mine : callOf(mine)) +
         " but rank " + std::to_string(peer) + " called " + (sameCall ? theirs : callOf(theirs));
}

}  // namespace smddp::watch
