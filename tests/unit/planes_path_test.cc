// SPDX-License-Identifier: Apache-2.0
// The data path of a call on CUDA memory (planes/smddp/path.h): IPC for every equal-block collective
// among ranks of one host when its chunk fits the scratch, direct only for
// send/recv to another host over a transport that takes CUDA memory, staged otherwise —
// all_to_allv, and everything in between; across hosts of equal size IPC within each host for
// all_reduce, reduce_scatter and all_gather.
#include <gtest/gtest.h>

#include "planes/smddp/path.h"

namespace smddp::planes {
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
  f.op = ReduceOp::kAvg;  // reduced as SUM, then divided on the device
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kIpc);
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
  f.fabricTakesDevice = true;  // a direct transport changes nothing for collectives
  f.count = 5;
  f.oneHost = false;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
}

TEST(DevicePath, EveryEqualBlockCollectiveGoesThroughIpcWithinOneHost) {
  for (CollectiveKind k :
       {CollectiveKind::kBroadcast, CollectiveKind::kAllGather, CollectiveKind::kReduceScatter,
        CollectiveKind::kReduce, CollectiveKind::kGather, CollectiveKind::kScatter,
        CollectiveKind::kAllToAll}) {
    DevicePathFacts f = facts(k);
    f.oneHost = true;
    f.ipc = true;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kIpc) << toString(k);
    f.ipcFits = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.ipcFits = true;
    f.oneHost = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.oneHost = true;
    f.ipc = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
  }
  DevicePathFacts f = facts(CollectiveKind::kAllToAllV);  // uneven pieces: staged
  f.oneHost = true;
  f.ipc = true;
  EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged);
}

// Across hosts of equal size with an arena each: all_reduce, reduce_scatter and all_gather through
// IPC within each host, only the share staged; the rest, and uneven hosts, staged.
TEST(DevicePath, IpcAcrossHostsIsForAllReduceReduceScatterAndAllGather) {
  for (CollectiveKind k : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                           CollectiveKind::kAllGather, CollectiveKind::kBroadcast,
                           CollectiveKind::kReduce, CollectiveKind::kAllToAll,
                           CollectiveKind::kAllToAllV, CollectiveKind::kGather}) {
    const bool form = k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduceScatter ||
                      k == CollectiveKind::kAllGather;
    DevicePathFacts f = facts(k);
    f.ipc = true;
    f.evenHosts = true;
    EXPECT_EQ(chooseDevicePath(f), form ? DevicePath::kIpcHosts : DevicePath::kStaged)
        << toString(k);
    f.ipcFitsAcrossHosts = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.ipcFitsAcrossHosts = true;
    f.evenHosts = false;  // hosts of different sizes, or no arena on them
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.evenHosts = true;
    f.ipc = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.ipc = true;
    f.count = 0;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
  }
}

TEST(DevicePath, DirectIsForMessagesToAnotherHostOverADirectTransport) {
  for (CollectiveKind k : {CollectiveKind::kSend, CollectiveKind::kRecv}) {
    DevicePathFacts f = facts(k);
    f.fabricTakesDevice = true;
    f.peerElsewhere = true;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kFabric) << toString(k);
    f.peerElsewhere = false;  // same host, or a receive from any source
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.peerElsewhere = true;
    f.fabricTakesDevice = false;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
    f.fabricTakesDevice = true;
    f.count = 0;
    EXPECT_EQ(chooseDevicePath(f), DevicePath::kStaged) << toString(k);
  }
}

}  // namespace
}  // namespace smddp::planes
