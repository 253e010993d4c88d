// SPDX-License-Identifier: Apache-2.0
// What a perf tool needs to know about one collective: how many elements a row of a given size
// moves, how to fill this rank's input, how to call the engine, the exact expected value of every
// received element, and the algbw -> busbw factor. One small .cc per collective fills one in; the
// driver knows nothing collective-specific. Invariant: expected(i) is a pure function of the case
// and i, and is exact (see verify.h) for every dtype the engine accepts.
#pragma once

#include <cstddef>

#include "smddp/communicator.h"
#include "smddp/types.h"

namespace smddp::bench {

struct CaseParams {
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;  // kSum for collectives without an op (tolerance 0)
  int root = -1;                 // -1 for collectives without a root
  int nranks = 1;
  int rank = 0;
  size_t count = 0;  // this row's per-rank element count (the count column)
  // Where the buffers live (-g): host memory, or memory of CUDA device `device` ordered by
  // `stream` (a cudaStream_t, or the fake device's).
  MemoryType memory = MemoryType::kHost;
  int device = -1;
  void* stream = nullptr;
};

// `count` elements of the case's dtype at `data`, in the case's memory.
inline Buffer buffer(const CaseParams& p, const void* data, size_t count) {
  return Buffer(data, count, p.dtype, p.memory, p.device, p.stream);
}

struct CollectiveSpec {
  const char* name;  // "all_reduce": the binary is <name>_perf
  bool usesOp;       // -o applies and the redop column shows it
  bool usesRoot;     // -r applies and the root column shows it
  bool movesData;    // false (barrier): one row, time only, no bandwidth
  // Elements per rank (the count column) for a row of `bytes`, rounded down.
  size_t (*countFor)(size_t bytes, size_t elemSize, int nranks);
  size_t (*sendCount)(size_t count, int nranks);
  // The row's size is the larger of the two buffers (nccl-tests: the whole buffer).
  size_t (*recvCount)(size_t count, int nranks);
  // Where this rank's input lies in recv (in elements) when the collective runs in place; with
  // outputInInput, where its output lies in send.
  size_t (*inPlaceOffset)(size_t count, int nranks, int rank);
  double (*busBwFactor)(int nranks);
  double (*input)(const CaseParams& p, size_t index);     // this rank's send[index]
  double (*expected)(const CaseParams& p, size_t index);  // recv[index] once the run is done
  // In place when send lies inside recv (see inPlaceOffset).
  Request (*run)(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                 size_t count);
  // The same call through the blocking form (-z 1: as MPI's blocking collectives).
  void (*runBlocking)(Communicator& comm, const CaseParams& p, const void* send, void* recv,
                      size_t count);
  // In place puts the output inside the input (reduce_scatter) rather than the input inside the
  // output (all_gather, all_reduce, broadcast).
  bool outputInInput = false;
  // False when the collective has no in place form (all_to_all): the in place columns read N/A.
  bool hasInPlace = true;
  // Only the root's output is defined (reduce, gather): the other ranks' are not checked.
  bool outputOnRootOnly = false;
};

const CollectiveSpec& allReduceSpec();
const CollectiveSpec& broadcastSpec();
const CollectiveSpec& allGatherSpec();
const CollectiveSpec& barrierSpec();
const CollectiveSpec& reduceScatterSpec();
const CollectiveSpec& allToAllSpec();
const CollectiveSpec& sendRecvSpec();
const CollectiveSpec& reduceSpec();   // rooted.cc
const CollectiveSpec& gatherSpec();   // rooted.cc
const CollectiveSpec& scatterSpec();  // rooted.cc

}  // namespace smddp::bench
