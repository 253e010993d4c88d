// SPDX-License-Identifier: Apache-2.0
// The data path of a call on CUDA memory (core/device_path.h): IPC only for all_reduce (not AVG)
// among ranks of one host, direct only for send/recv to another host over a transport that takes
// CUDA memory, staged otherwise — every other collective, and everything in between.
#include <gtest/gtest.h>

#include "core/device_path.h"

namespace smddp::core {
namespace {

DevicePathFacts facts(CollectiveKind kind) {
  DevicePathFacts f;
  f.kind = kind;
  f.count = 1000;
  f.ranks = 4;
  return f;
}

TEST(DevicePath, IpcIsForAllReduceWithinOneHost) {
  DevicePathFacts f = facts(CollectiveKind::kAllReduce);
  f.oneHost = true;
  f.ipc = true;
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax}) {
    f.op = op;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kIpc) << toString(op);
  }
  f.op = ReduceOp::kAvg;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
  f.op = ReduceOp::kSum;
  f.ipc = false;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
  f.ipc = true;
  f.oneHost = false;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
  f.oneHost = true;
  f.ranks = 1;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
  f.ranks = 2;
  f.count = 0;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
  f.providerDirect = true;  // a direct transport changes nothing for collectives
  f.count = 5;
  f.oneHost = false;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
}

TEST(DevicePath, OtherCollectivesAreStaged) {
  for (CollectiveKind k :
       {CollectiveKind::kBroadcast, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kReduce, CollectiveKind::kGather, CollectiveKind::kScatter,
        CollectiveKind::kAllToAll, CollectiveKind::kAllToAllV}) {
    DevicePathFacts f = facts(k);
    f.oneHost = true;
    f.ipc = true;
    f.providerDirect = true;
    f.peerElsewhere = true;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
  }
}

TEST(DevicePath, DirectIsForMessagesToAnotherHostOverADirectTransport) {
  for (CollectiveKind k : {CollectiveKind::kSend, CollectiveKind::kRecv}) {
    DevicePathFacts f = facts(k);
    f.providerDirect = true;
    f.peerElsewhere = true;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kDirect) << toString(k);
    f.peerElsewhere = false;  // same host, or a receive from any source
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.peerElsewhere = true;
    f.providerDirect = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.providerDirect = true;
    f.count = 0;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
  }
}

}  // namespace
}  // namespace smddp::core
