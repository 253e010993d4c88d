// SPDX-License-Identifier: Apache-2.0
// The device side of the CUDA IPC all_reduce (DeviceStager::stageIpc, device_stager.h): what the
// staging stream runs between the host barriers, reading every rank's scratch (device_ipc.h).
#include "algorithms/patterns/ring.h"
#include "core/device_stager.h"

namespace smddp::core {

void DeviceStager::reduceInRankOrder(const algo::CollectiveArgs& args, void* dst, size_t count,
                                     const std::function<const char*(int)>& source) {
  device_.reduceAsync(args.dtype, args.op, dst, source(0), source(1), count, stream_);
  for (int q = 2; q < size_; ++q) {
    device_.reduceAsync(args.dtype, args.op, dst, dst, source(q), count, stream_);
  }
}

void DeviceStager::enqueueOneShot(StagedCall& call, const algo::CollectiveArgs& args,
                                  IpcPeers& peers) {
  const int parity = peers.nextOneShot();
  device_.record(call.start_, args.stream);
  device_.streamWait(stream_, call.start_);
  device_.copyAsync(peers.small(rank_, parity), args.send, args.bytes(), stream_);
  device_.record(call.ready_[0], stream_);
  device_.waitValue(stream_, &call.flags_[0], 1);
  reduceInRankOrder(args, args.recv, args.count, [&](int q) { return peers.small(q, parity); });
  device_.record(call.end_, stream_);
}

void DeviceStager::enqueueIpc(StagedCall& c, const algo::CollectiveArgs& args, IpcPeers& peers) {
  StagedCall* call = &c;
  const size_t es = args.elementSize();
  const size_t perChunk = std::max<size_t>(1, peers.slotBytes() / es);
  const size_t chunks = call->segments() / 2;
  device_.record(call->start_, args.stream);
  device_.streamWait(stream_, call->start_);
  const auto* send = static_cast<const char*>(args.send);
  auto* recv = static_cast<char*>(args.recv);
  for (size_t k = 0; k < chunks; ++k) {
    const size_t first = k * perChunk;
    const size_t count = std::min(perChunk, args.count - first);
    device_.copyAsync(peers.in(rank_), send + first * es, count * es, stream_);
    device_.record(call->ready_[2 * k], stream_);
    device_.waitValue(stream_, &call->flags_[2 * k], 1);
    const algo::patterns::Range mine = algo::patterns::ringChunk(count, size_, rank_);
    if (mine.count > 0) {
      reduceInRankOrder(args, peers.out(rank_) + mine.begin * es, mine.count,
                        [&](int q) { return peers.in(q) + mine.begin * es; });
    }
    device_.record(call->ready_[2 * k + 1], stream_);
    device_.waitValue(stream_, &call->flags_[2 * k + 1], 1);
    for (int q = 0; q < size_; ++q) {
      const algo::patterns::Range slice = algo::patterns::ringChunk(count, size_, q);
      if (slice.count > 0) {
        device_.copyAsync(recv + (first + slice.begin) * es, peers.out(q) + slice.begin * es,
                          slice.count * es, stream_);
      }
    }
  }
  device_.record(call->end_, stream_);
}

}  // namespace smddp::core
