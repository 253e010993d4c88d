// SPDX-License-Identifier: Apache-2.0
// Logging in the style of NCCL_DEBUG: SMDDP_DEBUG=WARN|INFO|TRACE, each line prefixed with
// host:pid:rank so the lines of many ranks can be interleaved in one file and still be read.
#pragma once

#include <sstream>
#include <string>

#include "common/config.h"

namespace smddp {

bool logEnabled(LogLevel level);
// rank < 0 prints no rank (bootstrap before the rank is known).
void logLine(LogLevel level, int rank, const std::string& text);
const std::string& hostName();

}  // namespace smddp

#define SMDDP_LOG(level, rank, expr)                                   \
  do {                                                                 \
    if (::smddp::logEnabled(::smddp::LogLevel::level)) {               \
      std::ostringstream smddp_log_os_;                                \
      smddp_log_os_ << expr;                                           \
      ::smddp::logLine(::smddp::LogLevel::level, rank, smddp_log_os_.str()); \
    }                                                                  \
  } while (0)
#define SMDDP_WARN(rank, expr) SMDDP_LOG(kWarn, rank, expr)
#define SMDDP_INFO(rank, expr) SMDDP_LOG(kInfo, rank, expr)
#define SMDDP_TRACE(rank, expr) SMDDP_LOG(kTrace, rank, expr)
