// SPDX-License-Identifier: Apache-2.0
// smddp's test NCCL: the NCCL calls smddp's NCCL plane uses, with NCCL's ABI (nccl.h), running on
// the fake device (SMDDP_DEVICE=fake) so that every NCCL-plane path is tested without a GPU:
//   - its collectives run as tasks on the fake device's streams (after their random delays),
//     read and write the fake device's memory (never host memory: a host pointer is refused, as
//     a GPU would fault) and really move the data between the processes (mesh.h);
//   - a communicator is formed from an id (ncclGetUniqueId) by every rank, non-blocking when
//     its config asks (ncclInProgress until every peer connected);
//   - like a real NCCL's kernels, a task whose peer is gone, silent, or sent another size waits
//     until ncclCommAbort, which ends it, so the stream goes on;
//   - results are the rank-order reduction with smddp's CPU reducer (deterministic, and exact
//     where the tests' closed forms are);
//   - ncclCommShrink, ncclMemAlloc and the windows exist unless built minimal (the oldest NCCL
//     smddp takes: version 2.18.0), so both sides of "found at run time" are tested.
// The version it reports is its build's (SMDDP_TEST_NCCL_VERSION_CODE): 2.30.7, 2.18.0 for the
// minimal build, 2.16.5 for the build that tests the plane's version check.
// Internal to the library: the communicator state and the task runner.
#pragma once

#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mesh.h"

namespace smddp::testnccl {

struct CommState {
  std::string name;  // of its mesh: derived from the id, and from the parent for a shrink
  int rank = 0;
  int size = 1;
  Mesh mesh;
  std::mutex meshMutex;  // one task's exchanges at a time
  std::atomic<bool> aborted{false};
  std::atomic<int> state{ncclInProgress};  // ncclInProgress until connected, then its outcome
  std::thread connector;                   // the non-blocking connect
  uint64_t shrinks = 0;
  std::string error;  // why state is an error

  bool stopped() const { return aborted.load(std::memory_order_acquire); }
};

struct Op {
  enum class Kind { kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kSend, kRecv };
  Kind kind;
  const void* send = nullptr;  // host views of the device buffers
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclUint8;
  ncclRedOp_t op = ncclSum;
  int root = 0;  // or the peer of a send / recv
};

// Runs `ops` (one task) on the communicator: p2p ops in a row form one exchange.
void runOps(CommState& comm, const std::vector<Op>& ops);
size_t typeSize(ncclDataType_t type);

}  // namespace smddp::testnccl
