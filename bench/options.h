// SPDX-License-Identifier: Apache-2.0
// Command-line options of the perf tools, parsed as nccl-tests spells them (-b -e -f -i -n -w -c -d
// -o -r) plus smddp's own (-np -P -B -g -J -T -L). Invariant: parseArgs either returns a fully
// validated BenchOptions or throws ArgError whose message names the offending flag and value.
#pragma once

#include <cstddef>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "smddp/types.h"

namespace smddp::bench {

class ArgError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct BenchOptions {
  size_t minBytes = 32 << 20;
  size_t maxBytes = 32 << 20;
  size_t stepFactor = 2;  // multiplicative sweep when stepBytes == 0
  size_t stepBytes = 0;   // additive sweep when > 0 (-i)
  int iters = 20;
  int warmupIters = 5;
  bool check = true;
  // -z: 0 post all iterations, then wait; 1 the blocking forms (Communicator::*Blocking);
  // 2 post each and wait for it before the next.
  int blocking = 0;
  // -g: 0 host buffers; 1 CUDA buffers (SMDDP_DEVICE's device layer: CUDA, or the fake device),
  // rank r on device r mod the devices visible (one per rank, or ranks sharing one).
  int gpu = 0;
  int bind = 1;  // -B: 0 none; 1 one core per -np rank when there are enough; 2 also round-robin
  std::vector<DataType> dtypes{DataType::kFloat32};
  std::vector<ReduceOp> ops{ReduceOp::kSum};
  int root = 0;                         // -1: every root in turn
  int localRanks = 0;                   // -np: > 0 forks that many ranks on this host
  std::optional<std::string> provider;  // -P: shm | tcp | efa | auto
  std::string jsonPath;                 // -J
  std::optional<int64_t> timeoutMs;     // -T: communicator timeout
  int launchTimeoutSec = 3600;          // -L: bound on the whole -np run
  bool help = false;
};

// args excludes argv[0]. Throws ArgError on an unknown flag, a missing or malformed value, or an
// inconsistent combination (min > max, both -f and -i, ...).
BenchOptions parseArgs(const std::vector<std::string>& args);

// "64", "64K", "1M", "2G" (case-insensitive suffix) -> bytes. Throws ArgError naming flag.
size_t parseSize(const std::string& flag, const std::string& text);

// Names accepted by -d and -o ("all" expands to every one; avg stays in the list and is skipped
// for integer types by the driver).
std::vector<DataType> parseDataTypes(const std::string& text);
std::vector<ReduceOp> parseReduceOps(const std::string& text);

// The -h text.
std::string usageText(const std::string& program);

// The sizes a sweep visits: min, then *factor (or +step) while <= max. 0 is followed by 1 in a
// multiplicative sweep. Throws ArgError when the sweep would exceed kMaxSweepRows rows.
constexpr size_t kMaxSweepRows = 4096;
std::vector<size_t> sizeSweep(size_t minBytes, size_t maxBytes, size_t stepFactor,
                              size_t stepBytes);

}  // namespace smddp::bench
