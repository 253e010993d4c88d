// SPDX-License-Identifier: Apache-2.0
// Human-readable descriptions of collectives, used in every error message and trace line.
#include "algorithms/collective.h"

#include <cstdio>

namespace smddp::algo {

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

std::string CollectiveDesc::describe() const {
  std::string s = std::string(toString(kind)) + " #" + std::to_string(seq);
  if (!carriesData()) return s;
  s += " (" + std::string(toString(dtype)) +
       (uneven() ? ", per-rank counts"
                 : " x " + std::to_string(count) + " = " + formatBytes(bytes()));
  if (reduces()) s += ", " + std::string(toString(op));
  if (rooted()) s += ", root " + std::to_string(root);
  if (algorithm != nullptr) s += std::string(", ") + algorithm;
  return s + ")";
}

}  // namespace smddp::algo
