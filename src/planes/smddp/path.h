// SPDX-License-Identifier: Apache-2.0
// Which data path a call on CUDA memory takes. Pure, so it is unit-tested without a device.
//   kIpc     all_reduce, reduce, reduce_scatter, broadcast, all_gather, gather, scatter and
//            all_to_all among ranks of one host: on the devices, through CUDA IPC
//            (ipc_peers.h, ipc_plan.h).
//   kIpcHosts all_reduce, reduce_scatter and all_gather over several hosts with the same number
//            (>= 2) of ranks each and an arena per host: IPC within each host, only each rank's
//            share staged and exchanged with its counterparts (ipc_plan.h: IpcHosts).
//   kFabric  send/recv to or from a rank on another host when the transport moves CUDA memory
//            itself (libfabric FI_HMEM, GPUDirect): the buffer is registered and handed to the
//            provider, no copy. Collectives never take this path: their algorithms copy and reduce
//            with the CPU.
//   kStaged  everything else: through pinned host memory (stager.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/call.h"

namespace smddp::planes {

enum class DevicePath : uint8_t { kStaged, kIpc, kIpcHosts, kFabric };

struct DevicePathFacts {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  ReduceOp op = ReduceOp::kSum;
  size_t count = 0;
  int ranks = 1;
  bool oneHost = false;         // every rank of the communicator runs on this host
  bool ipc = false;             // CUDA IPC allowed (SMDDP_DEVICE_IPC) and not found unusable
  bool ipcFits = true;          // the scratch holds a chunk of this call (ipcFits)
  bool evenHosts = false;       // several hosts, the same number (>= 2) of ranks and an arena each
  bool ipcFitsAcrossHosts = true;  // ... and the scratch holds a chunk (ipcFitsAcrossHosts)
  bool fabricTakesDevice = false;  // the point-to-point transport takes CUDA memory (FI_HMEM)
  bool peerElsewhere = false;   // send/recv: the peer is known and on another host
};

DevicePath chooseDevicePath(const DevicePathFacts& facts);

}  // namespace smddp::planes
