// SPDX-License-Identifier: Apache-2.0
// all_reduce_perf: recv = op over every rank's send. busbw = algbw * 2(n-1)/n, the bytes each rank
// must send (and receive) in an optimal reduce-scatter + all-gather, over the message size.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

double input(const CaseParams& p, size_t i) {
  return reductionInput(p.dtype, p.op, p.nranks, p.rank, i);
}
double expected(const CaseParams& p, size_t i) {
  return reductionExpected(p.dtype, p.op, p.nranks, i);
}

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.allReduce(buffer(p, send, count), buffer(p, recv, count), p.op);
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.allReduceBlocking(buffer(p, send, count), buffer(p, recv, count), p.op);
}

}  // namespace

const CollectiveSpec& allReduceSpec() {
  static const CollectiveSpec spec{"all_reduce",
                                   true,
                                   false,
                                   true,
                                   shape::wholeRow,
                                   shape::oneBlock,
                                   shape::oneBlock,
                                   shape::atStart,
                                   shape::factorAllReduce,
                                   input,
                                   expected,
                                   run,
                                   runBlocking};
  return spec;
}

}  // namespace smddp::bench
