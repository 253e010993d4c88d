// SPDX-License-Identifier: Apache-2.0
// The device side of a collective through CUDA IPC (DeviceStager::stageIpc, stager.h): the
// plan's copies and reductions on the staging stream, each host step (barrier or exchange) a
// segment whose readiness is recorded before it and whose flag the stream waits for after it
// (ipc_plan.h).
#include "planes/smddp/stager.h"

namespace smddp::planes {

void DeviceStager::enqueuePlan(StagedCall& call, const algo::CollectiveArgs& args,
                               const std::vector<IpcOp>& ops) {
  device_.record(call.start_, args.stream);
  device_.streamWait(stream_, call.start_);
  size_t k = 0;
  for (const IpcOp& op : ops) {
    switch (op.kind) {
      case IpcOp::kCopy:
        device_.copyAsync(op.dst, op.a, op.bytes, stream_);
        break;
      case IpcOp::kReduce:
        device_.reduceAsync(args.dtype, args.op, op.dst, op.a, op.b, op.count, stream_);
        break;
      case IpcOp::kAverage:
        device_.finishAverageAsync(args.dtype, op.dst, op.count, op.divisor, stream_);
        break;
      case IpcOp::kBarrier:
      case IpcOp::kExchange:
        device_.record(call.ready_[k], stream_);
        device_.waitValue(stream_, &call.flags_[k], 1);
        ++k;
        break;
    }
  }
  device_.record(call.end_, stream_);
}

}  // namespace smddp::planes
