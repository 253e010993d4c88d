// SPDX-License-Identifier: Apache-2.0
// What the multi-process fault tests share: 3 forked ranks joined over a file store, a short
// heartbeat timeout (set before any communicator reads the configuration), and the children's
// verdict on an expected failure (code, text, bound) as an exit status forkRanks reports.
#pragma once

#include <stdlib.h>

#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "smddp/smddp.h"

namespace smddp::failure {

using Clock = std::chrono::steady_clock;

// Read once by the config parser, before any communicator exists: a short heartbeat timeout so the
// hang test is quick (the default is 30 s).
// Warnings on (the default), which the shutdown case reads from its log.
inline const int kEnvSet =
    (::setenv("SMDDP_HEARTBEAT_TIMEOUT_MS", "3000", 1), ::setenv("SMDDP_DEBUG", "WARN", 1), 0);
inline constexpr int kRanks = 3;

inline std::shared_ptr<Communicator> join(std::shared_ptr<Store> s, const std::string& provider,
                                          int rank, std::chrono::milliseconds timeout,
                                          int size = kRanks) {
  Options opts;
  opts.provider = provider;
  opts.timeout = timeout;
  return Communicator::create(std::move(s), rank, size, opts);
}

inline double secondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// The child's verdict on an expected failure: 0 when code and text are right and it came in time.
inline int expectFailure(int rank, const Error& e, std::initializer_list<ErrorCode> codes,
                         const std::vector<std::string>& needles, Clock::time_point t0,
                         double bound) {
  std::fprintf(stderr, "rank %d after %.2f s: [%s] %s\n", rank, secondsSince(t0),
               toString(e.code()), e.what());
  bool codeOk = false;
  for (ErrorCode c : codes) codeOk = codeOk || e.code() == c;
  if (!codeOk) return 2;
  for (const auto& needle : needles) {
    if (std::string(e.what()).find(needle) == std::string::npos) return 3;
  }
  return secondsSince(t0) < bound ? 0 : 4;
}

// Survivors stay until every survivor has raised: a rank that exits early would itself be seen
// (rightly) as a dead peer by a survivor still waiting.
inline void holdUntilAllRaised(Store& s, int rank, int victim) {
  s.set("raised/" + std::to_string(rank), "1");
  for (int r = 0; r < kRanks; ++r) {
    if (r != victim) s.get("raised/" + std::to_string(r), std::chrono::seconds(30));
  }
}

}  // namespace smddp::failure
