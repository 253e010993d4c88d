// SPDX-License-Identifier: Apache-2.0
// Collective signatures: what a rank called at one sequence number, as a 12-bit hash for the tags
// (common/tag.h) and as text for the progress beacons and for kMismatch messages such as
// "rank 0 called all_reduce(float32, 1024, sum) but rank 3 called broadcast(float16, 512, root=1)".
// Invariant: equal signatures give equal hashes and equal text on every rank (no addresses, no
// per-process state), so ranks compare them across processes and hosts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/call.h"

namespace smddp::watch {

// A plain value (no allocation) that the flight recorder keeps per collective: the call and the
// algorithm that runs it.
struct Signature : Call {
  const char* algorithm = nullptr;  // static registry name; nullptr when run locally

  Signature() = default;
  Signature(const Call& call, const char* algorithmName) : Call(call), algorithm(algorithmName) {}
};

// 12-bit hash (tag::kSigBits) of shapeHash (common/call.h) of the call and its algorithm.
uint16_t signatureHash(const Signature& sig);
// The same from an already computed shapeHash (CollectiveDesc::shape).
uint16_t foldSignature(uint64_t shape);
// callText plus " [algorithm]" (how beacons publish it).
std::string signatureWithAlgorithm(const Signature& sig);

// "rank 0 called X but rank 3 called Y"; adds the algorithms when the calls read the same.
std::string mismatchText(int rank, const std::string& mine, int peer, const std::string& theirs);

}  // namespace smddp::watch
