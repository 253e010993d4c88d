// SPDX-License-Identifier: Apache-2.0
// alltoall_perf: block d of every rank's send (count elements) goes to rank d, which puts it at
// block `source` of its recv. As nccl-tests, the row size is the whole send buffer, count is per
// peer (size / (n * elemsize), rounded down), and busbw = algbw * (n-1)/n: each rank sends and
// receives the n-1 blocks that are not its own. The engine has no in place form: that group of
// columns reads N/A.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

// Element i of a rank's send is dataInput(rank, i); recv block s holds block `rank` of rank s's.
double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return dataInput(static_cast<int>(i / p.count),
                   p.count * static_cast<size_t>(p.rank) + i % p.count);
}

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  const size_t all = count * static_cast<size_t>(p.nranks);
  return comm.allToAll(buffer(p, send, all), buffer(p, recv, all));
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  const size_t all = count * static_cast<size_t>(p.nranks);
  comm.allToAllBlocking(buffer(p, send, all), buffer(p, recv, all));
}

}  // namespace

const CollectiveSpec& allToAllSpec() {
  static const CollectiveSpec spec{"alltoall",
                                   false,
                                   false,
                                   true,
                                   shape::blockOfRow,
                                   shape::allBlocks,
                                   shape::allBlocks,
                                   shape::atRankBlock,
                                   shape::factorAllButOne,
                                   input,
                                   expected,
                                   run,
                                   runBlocking,
                                   /*outputInInput=*/false,
                                   /*hasInPlace=*/false};
  return spec;
}

}  // namespace smddp::bench
