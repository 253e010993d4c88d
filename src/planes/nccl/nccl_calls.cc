// SPDX-License-Identifier: Apache-2.0
// smddp collectives as NCCL calls (nccl_calls.h).
#include "planes/nccl/nccl_calls.h"

#include "planes/nccl/nccl_types.h"

namespace smddp::planes::nccl {
namespace {

// ncclGroupStart ... ncclGroupEnd around `fn` (which returns the first failure or ncclSuccess).
template <class Fn>
ncclResult_t grouped(const NcclApi& api, Fn fn) {
  ncclResult_t r = api.groupStart();
  if (r != ncclSuccess) return r;
  const ncclResult_t inner = fn();
  const ncclResult_t end = api.groupEnd();  // always: a group left open poisons the thread
  return inner != ncclSuccess ? inner : end;
}

bool ok(ncclResult_t r) { return r == ncclSuccess || r == ncclInProgress; }

// Every rank sends pieces to and receives pieces from every other rank; this rank's own piece is
// a copy on the stream.
ncclResult_t exchange(const NcclApi& api, ncclComm_t comm, const algo::CollectiveArgs& a, int rank,
                      int size, cudaStream_t stream, device::Device& device) {
  const auto me = static_cast<size_t>(rank);
  if (a.recvPiece(me) != a.sendPiece(me) && a.sendPieceBytes(me) > 0) {
    device.copyAsync(a.recvPiece(me), a.sendPiece(me), a.sendPieceBytes(me), stream);
  }
  return grouped(api, [&] {
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      const auto p = static_cast<size_t>(q);
      if (a.sendPieceBytes(p) > 0) {
        const ncclResult_t r = api.send(a.sendPiece(p), a.sendPieceBytes(p), ncclUint8, q, comm, stream);
        if (!ok(r)) return r;
      }
      if (a.recvPieceBytes(p) > 0) {
        const ncclResult_t r = api.recv(a.recvPiece(p), a.recvPieceBytes(p), ncclUint8, q, comm, stream);
        if (!ok(r)) return r;
      }
    }
    return ncclSuccess;
  });
}

// all_gather into a list of buffers: this rank's input to every peer, block q from rank q.
ncclResult_t allGatherList(const NcclApi& api, ncclComm_t comm, const algo::CollectiveArgs& a,
                           int rank, int size, cudaStream_t stream, device::Device& device) {
  const size_t bytes = a.bytes();
  if (a.block(static_cast<size_t>(rank)) != a.send) {
    device.copyAsync(a.block(static_cast<size_t>(rank)), a.send, bytes, stream);
  }
  return grouped(api, [&] {
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      ncclResult_t r = api.send(a.send, bytes, ncclUint8, q, comm, stream);
      if (ok(r)) r = api.recv(a.block(static_cast<size_t>(q)), bytes, ncclUint8, q, comm, stream);
      if (!ok(r)) return r;
    }
    return ncclSuccess;
  });
}

// gather (toRoot) or scatter: the root exchanges one block with each other rank.
ncclResult_t rooted(const NcclApi& api, ncclComm_t comm, const algo::CollectiveArgs& a, int rank,
                    int size, cudaStream_t stream, device::Device& device, bool toRoot) {
  const size_t bytes = a.bytes();
  const auto root = static_cast<size_t>(a.root);
  if (rank == a.root) {
    void* mine = toRoot ? a.block(root) : a.recv;
    const void* from = toRoot ? a.send : a.sendBlock(root);
    if (mine != from) device.copyAsync(mine, from, bytes, stream);
  }
  return grouped(api, [&] {
    if (rank != a.root) {
      return toRoot ? api.send(a.send, bytes, ncclUint8, a.root, comm, stream)
                    : api.recv(a.recv, bytes, ncclUint8, a.root, comm, stream);
    }
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      const auto p = static_cast<size_t>(q);
      const ncclResult_t r = toRoot ? api.recv(a.block(p), bytes, ncclUint8, q, comm, stream)
                                    : api.send(a.sendBlock(p), bytes, ncclUint8, q, comm, stream);
      if (!ok(r)) return r;
    }
    return ncclSuccess;
  });
}

}  // namespace

ncclResult_t enqueueCollective(const NcclApi& api, ncclComm_t comm, const algo::CollectiveArgs& a,
                               int rank, int size, cudaStream_t stream, device::Device& device) {
  const bool uneven = a.kind == CollectiveKind::kAllToAllV;
  if (!uneven && a.bytes() == 0) return ncclSuccess;
  const NcclReduction red = ncclReduction(a.dtype, a.op);
  switch (a.kind) {
    case CollectiveKind::kAllReduce:
      return api.allReduce(a.send, a.recv, a.count * red.scale, red.type, red.op, comm, stream);
    case CollectiveKind::kReduce:
      return api.reduce(a.send, rank == a.root ? a.recv : nullptr, a.count * red.scale, red.type,
                        red.op, a.root, comm, stream);
    case CollectiveKind::kReduceScatter:
      return api.reduceScatter(a.send, a.recv, a.count * red.scale, red.type, red.op, comm, stream);
    case CollectiveKind::kBroadcast:
      return api.broadcast(rank == a.root ? a.send : a.recv, a.recv, a.bytes(), ncclUint8, a.root,
                           comm, stream);
    case CollectiveKind::kAllGather:
      if (a.blocks.empty()) {
        return api.allGather(a.send, a.recv, a.bytes(), ncclUint8, comm, stream);
      }
      return allGatherList(api, comm, a, rank, size, stream, device);
    case CollectiveKind::kAllToAll:
    case CollectiveKind::kAllToAllV:
      return exchange(api, comm, a, rank, size, stream, device);
    case CollectiveKind::kGather:
      return rooted(api, comm, a, rank, size, stream, device, true);
    case CollectiveKind::kScatter:
      return rooted(api, comm, a, rank, size, stream, device, false);
    default:
      return ncclInvalidUsage;
  }
}

}  // namespace smddp::planes::nccl
