// SPDX-License-Identifier: Apache-2.0
// Profiler marks (see profiler_marks.h).
#include "profiler_marks.h"

#include <ATen/record_function.h>

#include <cstring>
#include <string>

namespace smddp::torch_shim {
namespace {

std::string sizeText(size_t bytes) {
  if (bytes >= (size_t{1} << 20) && bytes % (size_t{1} << 20) == 0) {
    return std::to_string(bytes >> 20) + " MiB";
  }
  if (bytes >= 1024 && bytes % 1024 == 0) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}

}  // namespace

void markForProfiler(const Request* requests, size_t count, int device) {
  for (size_t i = 0; i < count; ++i) {
    const Request& r = requests[i];
    at::RecordFunction mark(at::RecordScope::USER_SCOPE);
    if (!mark.isActive()) return;  // no observer: nothing to build
    const char* algorithm = r.algorithm();
    const char* plane = device < 0 ? "host"
                        : algorithm != nullptr && std::strcmp(algorithm, "nccl") == 0
                            ? "nccl"
                            : "smddp device";
    mark.before("smddp:" + r.call() + " " + sizeText(r.bytes()) + " [" +
                (algorithm != nullptr ? algorithm : "local") + "] " + plane);
  }
}

}  // namespace smddp::torch_shim
