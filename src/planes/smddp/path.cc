// SPDX-License-Identifier: Apache-2.0
// The data path of a call on CUDA memory (path.h).
#include "planes/smddp/path.h"

#include "planes/smddp/ipc_plan.h"

namespace smddp::planes {

DevicePath chooseDevicePath(const DevicePathFacts& f) {
  if (f.kind == CollectiveKind::kSend || f.kind == CollectiveKind::kRecv) {
    return f.fabricTakesDevice && f.peerElsewhere && f.count > 0 ? DevicePath::kFabric
                                                                 : DevicePath::kStaged;
  }
  if (hasIpcForm(f.kind) && f.count > 0 && f.ranks > 1 && f.oneHost && f.ipc && f.ipcFits) {
    return DevicePath::kIpc;
  }
  if (hasIpcFormAcrossHosts(f.kind) && f.count > 0 && f.evenHosts && f.ipc &&
      f.ipcFitsAcrossHosts) {
    return DevicePath::kIpcHosts;
  }
  return DevicePath::kStaged;
}

}  // namespace smddp::planes
