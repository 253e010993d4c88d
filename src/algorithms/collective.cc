// SPDX-License-Identifier: Apache-2.0
// Human-readable descriptions of collectives, used in every error message and trace line.
#include "algorithms/collective.h"

#include <cstdio>

namespace smddp {

const char* toString(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kBroadcast: return "broadcast";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kBarrier: return "barrier";
    case CollectiveKind::kControl: return "control";
  }
  return "unknown-collective";
}

namespace algo {

std::string formatBytes(size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0 || v == static_cast<double>(static_cast<uint64_t>(v))) {
    std::snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(v), units[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, units[u]);
  }
  return buf;
}

constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

// FNV-1a of the name.
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
uint64_t shapeHash(CollectiveKind kind, DataType dtype, size_t count, ReduceOp op, int root,
                   uint64_t algorithmHash) {
  uint64_t h = kFnvOffset;
  auto mix = [&h](uint64_t value) {
    h ^= value;
    h *= kFnvPrime;
    h ^= h >> 29;
  };
  mix(static_cast<uint64_t>(kind));
  if (kind != CollectiveKind::kBarrier) {
    mix(static_cast<uint64_t>(dtype));
    mix(count);
  }
  if (kind == CollectiveKind::kAllReduce) mix(static_cast<uint64_t>(op));
  if (kind == CollectiveKind::kBroadcast) mix(static_cast<uint64_t>(root));
  mix(algorithmHash);
  return h;
}

std::string CollectiveDesc::describe() const {
  std::string s = std::string(toString(kind)) + " #" + std::to_string(seq);
  if (kind == CollectiveKind::kBarrier) return s;
  s += " (" + std::string(toString(dtype)) + " x " + std::to_string(count) + " = " +
       formatBytes(count * dataTypeSize(dtype));
  if (kind == CollectiveKind::kAllReduce) s += ", " + std::string(toString(op));
  if (kind == CollectiveKind::kBroadcast) s += ", root " + std::to_string(root);
  if (algorithm != nullptr) s += std::string(", ") + algorithm;
  return s + ")";
}

}  // namespace algo
}  // namespace smddp
