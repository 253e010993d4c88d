// SPDX-License-Identifier: Apache-2.0
// The data path of a call on CUDA memory (device_path.h).
#include "core/device_path.h"

namespace smddp::core {

DevicePath chooseDevicePath(const DevicePathFacts& f) {
  if (f.kind == CollectiveKind::kSend || f.kind == CollectiveKind::kRecv) {
    return f.providerDirect && f.peerElsewhere && f.count > 0 ? DevicePath::kDirect
                                                              : DevicePath::kStaged;
  }
  const bool form = f.kind == CollectiveKind::kAllReduce || f.kind == CollectiveKind::kReduce ||
                    f.kind == CollectiveKind::kReduceScatter ||
                    f.kind == CollectiveKind::kBroadcast || f.kind == CollectiveKind::kAllGather ||
                    f.kind == CollectiveKind::kGather || f.kind == CollectiveKind::kScatter ||
                    f.kind == CollectiveKind::kAllToAll;
  if (form && f.count > 0 && f.ranks > 1 && f.oneHost && f.ipc && f.ipcFits) {
    return DevicePath::kIpc;
  }
  return DevicePath::kStaged;
}

}  // namespace smddp::core
