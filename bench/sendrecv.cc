// SPDX-License-Identifier: Apache-2.0
// sendrecv_perf: every rank sends count elements to rank + 1 and receives as many from rank - 1
// at once (nccl-tests' sendrecv; MPI_Sendrecv around a ring). The row size is one message;
// busbw = algbw (each rank's link carries the message once). No in place form: N/A. With one
// rank there is nobody to send to: the row is a barrier.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return p.nranks == 1 ? dataInput(p.rank, i) : dataInput((p.rank + p.nranks - 1) % p.nranks, i);
}

// The receive is posted first; the send is waited for here, the receive by the caller.
Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  if (p.nranks == 1) return comm.barrier();
  Request r = comm.recv(buffer(p, recv, count), (p.rank + p.nranks - 1) % p.nranks);
  comm.send(buffer(p, send, count), (p.rank + 1) % p.nranks).wait();
  return r;
}

void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  if (p.nranks == 1) {
    comm.barrierBlocking();
    return;
  }
  run(comm, p, send, recv, count).wait();
}

}  // namespace

const CollectiveSpec& sendRecvSpec() {
  static const CollectiveSpec spec{"sendrecv",
                                   false,
                                   false,
                                   true,
                                   shape::wholeRow,
                                   shape::oneBlock,
                                   shape::oneBlock,
                                   shape::atStart,
                                   shape::factorOne,
                                   input,
                                   expected,
                                   run,
                                   runBlocking,
                                   /*outputInInput=*/false,
                                   /*hasInPlace=*/false};
  return spec;
}

}  // namespace smddp::bench
