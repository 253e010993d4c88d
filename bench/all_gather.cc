// SPDX-License-Identifier: Apache-2.0
// all_gather_perf: recv = every rank's send (count elements each) in rank order. As nccl-tests,
// the row size is the whole receive buffer, count is per rank (size / (n * elemsize), rounded
// down), and busbw = algbw * (n-1)/n: each rank receives the n-1 blocks it does not own.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return dataInput(static_cast<int>(i / p.count), i % p.count);
}

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.allGather(buffer(p, send, count),
                        buffer(p, recv, count * static_cast<size_t>(p.nranks)));
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.allGatherBlocking(buffer(p, send, count),
                         buffer(p, recv, count * static_cast<size_t>(p.nranks)));
}

}  // namespace

const CollectiveSpec& allGatherSpec() {
  static const CollectiveSpec spec{"all_gather",
                                   false,
                                   false,
                                   true,
                                   shape::blockOfRow,
                                   shape::oneBlock,
                                   shape::allBlocks,
                                   shape::atRankBlock,
                                   shape::factorAllButOne,
                                   input,
                                   expected,
                                   run,
                                   runBlocking};
  return spec;
}

}  // namespace smddp::bench
