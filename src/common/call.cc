// SPDX-License-Identifier: Apache-2.0
// The call vocabulary's names, text and hashes.
#include "common/call.h"

namespace smddp {

const char* toString(CollectiveKind kind) {
  // clang-format off
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kReduce: return "reduce";
    case CollectiveKind::kGather: return "gather";
    case CollectiveKind::kScatter: return "scatter";
    case CollectiveKind::kAllToAll: return "all_to_all";
    case CollectiveKind::kAllToAllV: return "all_to_allv";
    case CollectiveKind::kSend: return "send";
    case CollectiveKind::kRecv: return "recv";
    case CollectiveKind::kControl: return "control";
  }
  // clang-format on
  return "unknown-collective";
}

Call Call::of(CollectiveKind kind, DataType dtype, size_t count, ReduceOp op, int root) {
  Call c;
  c.kind = kind;
  if (carriesData(kind)) {
    c.dtype = dtype;
    c.count = uneven(kind) ? 0 : count;
  }
  if (reduces(kind)) c.op = op;
  if (rooted(kind)) c.root = root;
  return c;
}

bool operator==(const Call& a, const Call& b) {
  return a.kind == b.kind && a.dtype == b.dtype && a.count == b.count && a.op == b.op &&
         a.root == b.root;
}

std::string callText(const Call& call) {
  std::string s = std::string(toString(call.kind)) + "(";
  if (call.carriesData()) {
    s += std::string(toString(call.dtype)) + ", " +
         (call.uneven() ? std::string("per-rank counts") : std::to_string(call.count));
    if (call.reduces()) s += ", " + std::string(toString(call.op));
    if (call.rooted()) s += ", root=" + std::to_string(call.root);
  }
  return s + ")";
}

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t algorithmNameHash(const char* algorithm) {
  if (algorithm == nullptr) return 0;
  uint64_t h = kFnvOffset;
  for (const char* c = algorithm; *c != '\0'; ++c) {
    h = (h ^ static_cast<unsigned char>(*c)) * kFnvPrime;
  }
  return h;
}

// One multiply per field (not per byte). The communicator derives it once per run of identical
// calls (under its engine's lock).
uint64_t shapeHash(const Call& call, uint64_t algorithmHash) {
  uint64_t h = kFnvOffset;
  auto mix = [&h](uint64_t value) {
    h ^= value;
    h *= kFnvPrime;
    h ^= h >> 29;
  };
  mix(static_cast<uint64_t>(call.kind));
  if (call.carriesData()) {
    mix(static_cast<uint64_t>(call.dtype));
    mix(call.count);
  }
  if (call.reduces()) mix(static_cast<uint64_t>(call.op));
  if (call.rooted()) mix(static_cast<uint64_t>(call.root));
  mix(algorithmHash);
  return h;
}

}  // namespace smddp
