// SPDX-License-Identifier: Apache-2.0
// One smddp collective as NCCL calls on a stream (the caller made sure NCCL runs it:
// ncclRefusal() is empty, and every buffer is device memory):
//   all_reduce, reduce, reduce_scatter   ncclAllReduce / ncclReduce / ncclReduceScatter
//   broadcast, all_gather (one buffer)   ncclBroadcast / ncclAllGather, as bytes
//   all_gather (a list), gather,         one group of ncclSend / ncclRecv with every peer, this
//   scatter, all_to_all(v)               rank's own block copied on the stream
// Nothing is called for a call without data (count 0: the same on every rank; all_to_allv's
// empty pieces, which both ranks of a pair know).
#pragma once

#include <nccl.h>

#include "algorithms/collective.h"
#include "device/device.h"
#include "planes/nccl/nccl_api.h"

namespace smddp::planes::nccl {

// The result of the last NCCL call made (ncclInProgress on a non-blocking communicator: the
// caller polls ncclCommGetAsyncError), or the first failure.
ncclResult_t enqueueCollective(const NcclApi& api, ncclComm_t comm, const algo::CollectiveArgs& args,
                               int rank, int size, cudaStream_t stream, device::Device& device);

}  // namespace smddp::planes::nccl
