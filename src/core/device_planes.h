// SPDX-License-Identifier: Apache-2.0
// DevicePlanes: a communicator's side of the device planes (src/planes/): what this rank said
// of itself at creation (planes/choice.h, through the group's store), the plane its CUDA calls
// take once decided, and the NCCL plane when that is it. CommunicatorImpl owns one; its
// functions are in communicator_planes.cc.
// Invariants: the plane is decided once (every rank decides alike from the same facts); the
// NCCL plane is formed once, by the first CUDA call that takes it, and posts to it are made
// under postMutex, in the communicator's call order.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "planes/choice.h"
#include "smddp/store.h"

namespace smddp::planes::nccl {
class NcclComm;
class NcclPlane;
}  // namespace smddp::planes::nccl
namespace smddp::transport {
class PeerLiveness;
}  // namespace smddp::transport

namespace smddp::core {

struct DevicePlanes {
  DevicePlanes();
  ~DevicePlanes();

  std::shared_ptr<Store> store;  // null: no facts to share (tests over loopback): smddp's plane
  std::string prefix;
  bool published = false;  // this rank's facts are in the store
  int publishedOrdinal = -1;  // the device they name (-1: none)
  std::atomic<bool> warnedDevice{false};  // a call on another device was warned about
  std::string unpublished;  // why not, when not

  std::mutex mutex;  // guards the decision and the NCCL plane's creation
  std::atomic<int> decided{-1};  // -1 until decided, then a planes::Plane
  planes::PlaneChoice choice;
  // shared_ptr: destroyed where NcclPlane may be incomplete (a build without the NCCL plane)
  std::shared_ptr<planes::nccl::NcclPlane> nccl;
  // A group shrunk from another (Communicator::shrinkDevicePlaneOf): the parent's healthy NCCL
  // communicator to derive this one's from (null: this rank cannot), and the ranks left out.
  bool shrinkAsked = false;
  std::shared_ptr<planes::nccl::NcclComm> shrinkParent;
  std::vector<int> shrinkExcluded;

  std::mutex postMutex;  // posts to the NCCL plane, in call order

  // Same-host peers gone or stopped (the NCCL plane's verdict): checked every kCheckInterval.
  std::unique_ptr<transport::PeerLiveness> liveness;
  // (rank, pid) on this host and in this pid namespace (pidWatchable), but this rank
  std::vector<std::pair<int, int>> localPeers;
  std::chrono::steady_clock::time_point nextStopCheck{};
  std::mutex verdictMutex;  // guards the three above and verdict
  std::string verdict;      // once found, kept
  int verdictCode = 0;      // an ErrorCode
};

// "rank 3 (host, pid 123) is stopped (SIGSTOP)" style checks of /proc/<pid>/stat: 'T' or 't'.
bool processStopped(int pid);

}  // namespace smddp::core
