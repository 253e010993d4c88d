// SPDX-License-Identifier: Apache-2.0
// main() of the <collective>_perf binaries; CMake compiles it once per collective with
// SMDDP_BENCH_COLLECTIVE naming the spec function (allReduceSpec, broadcastSpec, ...).
#include "driver.h"

#ifndef SMDDP_BENCH_COLLECTIVE
#error "define SMDDP_BENCH_COLLECTIVE to a spec function such as allReduceSpec"
#endif

int main(int argc, char** argv) {
  return smddp::bench::benchMain(argc, argv, smddp::bench::SMDDP_BENCH_COLLECTIVE());
}
