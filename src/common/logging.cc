// SPDX-License-Identifier: Apache-2.0
// Log sink: one fprintf per line to stderr, so concurrent lines of one process do not interleave.
#include "common/logging.h"

#include <unistd.h>

#include <cstdio>

namespace smddp {

const std::string& hostName() {
  static const std::string name = [] {
    char buf[256] = {0};
    if (gethostname(buf, sizeof(buf) - 1) != 0) return std::string("unknown-host");
    return std::string(buf);
  }();
  return name;
}

bool logEnabled(LogLevel level) {
  return static_cast<int>(level) <= static_cast<int>(Config::global().debug);
}

void logLine(LogLevel level, int rank, const std::string& text) {
  const char* tag = level == LogLevel::kWarn ? "WARN" : level == LogLevel::kInfo ? "INFO" : "TRACE";
  if (rank >= 0) {
    std::fprintf(stderr, "%s:%d:%d [smddp] %s %s\n", hostName().c_str(), static_cast<int>(getpid()),
                 rank, tag, text.c_str());
  } else {
    std::fprintf(stderr, "%s:%d [smddp] %s %s\n", hostName().c_str(), static_cast<int>(getpid()), tag,
                 text.c_str());
  }
}

}  // namespace smddp
