// SPDX-License-Identifier: Apache-2.0
// reduce_scatter_perf: recv (count elements per rank) = op over every rank's block `rank` of send
// (n blocks of count). As nccl-tests, the row size is the whole send buffer, count is per rank
// (size / (n * elemsize), rounded down), in place means recv is this rank's block of send, and
// busbw = algbw * (n-1)/n: each rank sends and reduces the n-1 blocks it does not own.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

// The inputs of all_reduce over the whole send buffer; this rank's output element i is the
// all_reduce result at rank * count + i.
double input(const CaseParams& p, size_t i) {
  return reductionInput(p.dtype, p.op, p.nranks, p.rank, i);
}
double expected(const CaseParams& p, size_t i) {
  return reductionExpected(p.dtype, p.op, p.nranks, p.count * static_cast<size_t>(p.rank) + i);
}

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.reduceScatter(buffer(p, send, count * static_cast<size_t>(p.nranks)),
                            buffer(p, recv, count), p.op);
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.reduceScatterBlocking(buffer(p, send, count * static_cast<size_t>(p.nranks)),
                             buffer(p, recv, count), p.op);
}

}  // namespace

const CollectiveSpec& reduceScatterSpec() {
  static const CollectiveSpec spec{"reduce_scatter",
                                   true,
                                   false,
                                   true,
                                   shape::blockOfRow,
                                   shape::allBlocks,
                                   shape::oneBlock,
                                   shape::atRankBlock,
                                   shape::factorAllButOne,
                                   input,
                                   expected,
                                   run,
                                   runBlocking,
                                   /*outputInInput=*/true};
  return spec;
}

}  // namespace smddp::bench
