// SPDX-License-Identifier: Apache-2.0
// The rooted collectives' perf tools (each row runs every root in turn unless -r names one):
//   reduce_perf: recv on root = op over every rank's send (count elements). Row size = count x
//     elemsize; busbw = algbw (the root receives the whole result's worth once, as nccl-tests).
//   gather_perf: recv on root = every rank's send (count each) in rank order. Row size = the whole
//     receive buffer; busbw = algbw x (n-1)/n.
//   scatter_perf: recv on rank r = block r of root's send. Row size = the whole send buffer;
//     busbw = algbw x (n-1)/n.
// reduce and gather write the root's output only: the other ranks' outputs are not checked
// (outputOnRootOnly), their guards are.
#include "collective.h"
#include "shapes.h"
#include "verify.h"

namespace smddp::bench {
namespace {

namespace reduce {
double input(const CaseParams& p, size_t i) {
  return reductionInput(p.dtype, p.op, p.nranks, p.rank, i);
}
double expected(const CaseParams& p, size_t i) {
  return reductionExpected(p.dtype, p.op, p.nranks, i);
}
Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.reduce(buffer(p, send, count), buffer(p, recv, count), p.op, p.root);
}
void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.reduceBlocking(buffer(p, send, count), buffer(p, recv, count), p.op, p.root);
}
}  // namespace reduce

namespace gather {
double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return dataInput(static_cast<int>(i / p.count), i % p.count);
}
Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.gather(buffer(p, send, count),
                     buffer(p, recv, shape::allBlocks(count, p.nranks)), p.root);
}
void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.gatherBlocking(buffer(p, send, count),
                      buffer(p, recv, shape::allBlocks(count, p.nranks)), p.root);
}
}  // namespace gather

namespace scatter {
// Every rank fills its send; only the root's is read.
double input(const CaseParams& p, size_t i) { return dataInput(p.rank, i); }
double expected(const CaseParams& p, size_t i) {
  return dataInput(p.root, p.count * static_cast<size_t>(p.rank) + i);
}
Request run(Communicator& comm, const CaseParams& p, const void* send, void* recv, size_t count) {
  return comm.scatter(buffer(p, send, shape::allBlocks(count, p.nranks)),
                      buffer(p, recv, count), p.root);
}
void runBlocking(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count) {
  comm.scatterBlocking(buffer(p, send, shape::allBlocks(count, p.nranks)),
                       buffer(p, recv, count), p.root);
}
}  // namespace scatter

}  // namespace

const CollectiveSpec& reduceSpec() {
  static const CollectiveSpec spec{"reduce",
                                   true,
                                   true,
                                   true,
                                   shape::wholeRow,
                                   shape::oneBlock,
                                   shape::oneBlock,
                                   shape::atStart,
                                   shape::factorOne,
                                   reduce::input,
                                   reduce::expected,
                                   reduce::run,
                                   reduce::runBlocking,
                                   /*outputInInput=*/false,
                                   /*hasInPlace=*/true,
                                   /*outputOnRootOnly=*/true};
  return spec;
}

const CollectiveSpec& gatherSpec() {
  static const CollectiveSpec spec{"gather",
                                   false,
                                   true,
                                   true,
                                   shape::blockOfRow,
                                   shape::oneBlock,
                                   shape::allBlocks,
                                   shape::atRankBlock,
                                   shape::factorAllButOne,
                                   gather::input,
                                   gather::expected,
                                   gather::run,
                                   gather::runBlocking,
                                   /*outputInInput=*/false,
                                   /*hasInPlace=*/true,
                                   /*outputOnRootOnly=*/true};
  return spec;
}

const CollectiveSpec& scatterSpec() {
  static const CollectiveSpec spec{"scatter",
                                   false,
                                   true,
                                   true,
                                   shape::blockOfRow,
                                   shape::allBlocks,
                                   shape::oneBlock,
                                   shape::atRankBlock,
                                   shape::factorAllButOne,
                                   scatter::input,
                                   scatter::expected,
                                   scatter::run,
                                   scatter::runBlocking,
                                   /*outputInInput=*/true,
                                   /*hasInPlace=*/true,
                                   /*outputOnRootOnly=*/false};
  return spec;
}

}  // namespace smddp::bench
