// SPDX-License-Identifier: Apache-2.0
// broadcast_perf: recv on every rank = send of root. busbw = algbw: every rank but the root must
// receive the whole message once, whatever the algorithm.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

// Every rank fills its own pattern, so a non-root that keeps its input (in place) is caught.
double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) { return dataInput(p.root, i); }

Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.broadcast(buffer(p, send, count), buffer(p, recv, count), p.root);
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.broadcastBlocking(buffer(p, send, count), buffer(p, recv, count), p.root);
}

}  // namespace

const CollectiveSpec& broadcastSpec() {
  static const CollectiveSpec spec{"broadcast",
                                   false,
                                   true,
                                   true,
                                   shape::wholeRow,
                                   shape::oneBlock,
                                   shape::oneBlock,
                                   shape::atStart,
                                   shape::factorOne,
                                   input,
                                   expected,
                                   run,
                                   runBlocking};
  return spec;
}

}  // namespace smddp::bench
