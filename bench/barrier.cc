// SPDX-License-Identifier: Apache-2.0
// barrier_perf: no data; one row whose only measurement is the time per barrier (bandwidth 0).
#include "collective.h"

namespace smddp::bench {
namespace {

size_t none(size_t, size_t, int) { return 0; }
size_t noCount(size_t, int) { return 0; }
size_t noOffset(size_t, int, int) { return 0; }
double busBwFactor(int) { return 0.0; }
double noValue(const CaseParams&, size_t) { return 0.0; }

Request run(Communicator& comm, const CaseParams&, const void*, void*, size_t) {
  return comm.barrier();
}

void runBlocking(Communicator& comm, const CaseParams&, const void*, void*, size_t) {
  comm.barrierBlocking();
}

}  // namespace

const CollectiveSpec& barrierSpec() {
  static const CollectiveSpec spec{"barrier", false,    false,       false,   none,    noCount,
                                   noCount,   noOffset, busBwFactor, noValue, noValue, run,
                                   runBlocking};
  return spec;
}

}  // namespace smddp::bench
