// SPDX-License-Identifier: Apache-2.0
// all_gather_perf: recv = every rank's send (count elements each) in rank order. As nccl-tests,
// the row size is the whole receive buffer, count is per rank (size / (n * elemsize), rounded
// down), and busbw = algbw * (n-1)/n: each rank receives the n-1 blocks it does not own.
#include "collective.h"
#include "verify.h"

namespace smddp::bench {
namespace {

size_t countFor(size_t bytes, size_t elemSize, int n) {
  return bytes / (static_cast<size_t>(n) * elemSize);
}
size_t sendCount(size_t count, int) { return count; }
size_t recvCount(size_t count, int n) { return count * static_cast<size_t>(n); }
size_t rankOffset(size_t count, int, int rank) { return count * static_cast<size_t>(rank); }
double busBwFactor(int n) { return static_cast<double>(n - 1) / n; }

double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return dataInput(static_cast<int>(i / p.count), i % p.count);
}

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.allGather(Buffer(send, count, p.dtype),
                        Buffer(recv, count * static_cast<size_t>(p.nranks), p.dtype));
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.allGatherBlocking(Buffer(send, count, p.dtype),
                         Buffer(recv, count * static_cast<size_t>(p.nranks), p.dtype));
}

}  // namespace

const CollectiveSpec& allGatherSpec() {
  static const CollectiveSpec spec{"all_gather", false,     false,     true,
                                   countFor,     sendCount, recvCount, rankOffset,
                                   busBwFactor,  input,     expected,  run,
                                   runBlocking};
  return spec;
}

}  // namespace smddp::bench
