// SPDX-License-Identifier: Apache-2.0
// Argument checks for every collective, run on the caller's thread before anything is queued, so
// a bad call throws at once (naming rank, collective and the faulty argument) and leaves the
// communicator untouched and usable.
#pragma once

#include <vector>

#include "algorithms/collective.h"
#include "smddp/types.h"

namespace smddp::core {

struct CallSite {
  int rank;
  int size;
};

algo::CollectiveArgs checkAllReduce(const CallSite& at, const Buffer& send, const Buffer& recv,
                                    ReduceOp op);
algo::CollectiveArgs checkBroadcast(const CallSite& at, const Buffer& send, const Buffer& recv,
                                    int root);
algo::CollectiveArgs checkAllGather(const CallSite& at, const Buffer& send, const Buffer& recv);
// send holds size blocks of recv.count elements; recv = op over ranks of block `rank`.
algo::CollectiveArgs checkReduceScatter(const CallSite& at, const Buffer& send, const Buffer& recv,
                                        ReduceOp op);
// recv on root = op over all ranks' send; recv is not used (nor checked) on the other ranks.
algo::CollectiveArgs checkReduce(const CallSite& at, const Buffer& send, const Buffer& recv,
                                 ReduceOp op, int root);
// recv on root = every rank's send (send.count each) in rank order; recv unused elsewhere.
algo::CollectiveArgs checkGather(const CallSite& at, const Buffer& send, const Buffer& recv,
                                 int root);
// recv on rank r = block r of root's send (recv.count each); send unused off the root.
algo::CollectiveArgs checkScatter(const CallSite& at, const Buffer& send, const Buffer& recv,
                                  int root);

// validate_lists.cc: the forms with one buffer per rank (args.blocks), each of the single
// buffer's dtype and count, outputs disjoint; the single buffer may be the list's entry of this
// rank (all_gather) or of the root (gather, scatter) only exactly (in place).
algo::CollectiveArgs checkAllGatherList(const CallSite& at, const Buffer& send,
                                        const std::vector<Buffer>& recvs);
// recvs[r] on root = rank r's send; recvs unused (not checked) off the root.
algo::CollectiveArgs checkGatherList(const CallSite& at, const Buffer& send,
                                     const std::vector<Buffer>& recvs, int root);
// recv on rank r = sends[r] of root; sends unused (not checked) off the root.
algo::CollectiveArgs checkScatterList(const CallSite& at, const std::vector<Buffer>& sends,
                                      const Buffer& recv, int root);

// validate_all_to_all.cc
// send and recv: size blocks of count / size elements each, disjoint (no in place form).
algo::CollectiveArgs checkAllToAll(const CallSite& at, const Buffer& send, const Buffer& recv);
// sends[r] goes to rank r, recvs[q] comes from rank q (size each, one dtype, any counts; the
// counts of a pair must agree, which the algorithm checks: only the pair knows both). Every
// output piece is disjoint from every other piece; inputs may share memory.
algo::CollectiveArgs checkAllToAllV(const CallSite& at, const std::vector<Buffer>& sends,
                                    const std::vector<Buffer>& recvs);
// The pieces of MPI_Alltoallv: elements [offsets[r], offsets[r] + counts[r]) of send / recv.
// validate_point_to_point.cc: a send of buf to `peer` (another rank), a recv into buf from
// `peer` or transport::kAnyPeer.
algo::CollectiveArgs checkSend(const CallSite& at, const Buffer& buf, int peer);
algo::CollectiveArgs checkRecv(const CallSite& at, const Buffer& buf, int peer);

std::vector<Buffer> piecesOf(const CallSite& at, const char* name, const Buffer& whole,
                             const std::vector<size_t>& counts, const std::vector<size_t>& offsets);

}  // namespace smddp::core
