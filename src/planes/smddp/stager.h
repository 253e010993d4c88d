// SPDX-License-Identifier: Apache-2.0
// Staging of CUDA calls through pinned host memory: the data path that works over every provider.
// At post time, on the caller's thread, everything device-side is enqueued on the communicator's
// staging stream, in this order:
//   wait(start, recorded on the caller's stream)  -- after the work queued before the call
//   copy every segment's inputs to the pinned block, recording segment k's `ready` event
//   for each segment k: wait until flag[k] is raised, copy its outputs back to the device
//   record `end`
// The engine runs segment k's host call once `ready[k]` completed and raises flag[k] after it
// (also when it failed or never ran), so the device copies of one segment overlap the exchange of
// the others without the host ever blocking on the device. The caller's stream waits on `end`
// (Request::waitOnStream), again without blocking the host. The staging stream also orders each
// call after the previous one, as a communicator's collectives are ordered.
// Invariants: every flag is raised exactly once before its StagedCall is destroyed; a pinned block
// goes back to the pool only after its call's `end` completed; ~DeviceStager raises what is left,
// waits (bounded) for the stream, and leaks rather than frees memory the device may still write.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "algorithms/collective.h"
#include "planes/smddp/ipc_peers.h"
#include "planes/smddp/staged_layout.h"
#include "device/device.h"
#include "planes/device_work.h"

namespace smddp::planes {

class PinnedPool;
class DeviceWatchdog;

class StagedCall final : public DeviceWork {
 public:
  StagedCall(device::Device& device, int ordinal, size_t segments);
  ~StagedCall() override;
  StagedCall(const StagedCall&) = delete;
  StagedCall& operator=(const StagedCall&) = delete;

  size_t segments() const { return ready_.size(); }
  const algo::CollectiveArgs& hostArgs(size_t k) const { return layout_.segments[k].host; }
  device::Event ready(size_t k) const { return ready_[k]; }
  device::Event end() const override { return end_; }
  device::Device& device() const override { return device_; }
  // The stream its device work is enqueued on.
  device::Stream stream() const override { return stream_; }
  // Lets segment k's device copies go on (idempotent).
  void release(size_t k);
  void releaseAll();
  // For the watchdog: the collective's name, when it was posted, whether the caller finished
  // enqueuing its device work, how many flags are raised.
  const char* what() const { return what_; }
  std::chrono::steady_clock::time_point posted() const { return posted_; }
  bool enqueued() const { return enqueued_.load(std::memory_order_acquire); }
  size_t raised() const;

 private:
  friend class DeviceStager;
  friend class DeviceWatchdog;
  const char* what_ = "";
  std::chrono::steady_clock::time_point posted_ = std::chrono::steady_clock::now();
  std::atomic<bool> enqueued_{false};
  std::atomic<bool> reported_{false};  // the watchdog said it is late
  device::Device& device_;
  StagedLayout layout_;
  std::shared_ptr<char> block_;  // the pinned block; back to the pool when this call goes
  std::shared_ptr<char> pinned_;  // an IPC plan's pinned memory across hosts; goes alike
  uint32_t* flags_ = nullptr;    // pinned, one per segment
  char* data_ = nullptr;         // pinned, after the flags: the staged buffers
  device::Event start_ = nullptr;
  std::vector<device::Event> ready_;
  device::Event end_ = nullptr;
  device::Stream stream_ = nullptr;
};

class DeviceStager {
 public:
  // `late`: how long a call's device work may take after it was posted before the watchdog
  // reports it (watchdog.h; read at every check); `report`: where (default: the log).
  DeviceStager(device::Device& device, int ordinal, int rank, int size, size_t segmentBytes,
               std::function<std::chrono::milliseconds()> late,
               std::function<void(const std::string&)> report = nullptr);
  ~DeviceStager();
  DeviceStager(const DeviceStager&) = delete;
  DeviceStager& operator=(const DeviceStager&) = delete;

  int ordinal() const { return ordinal_; }
  // Pinned host memory held for staging (in calls or kept for the next).
  uint64_t pinnedBytes() const;
  // Lets every queued device copy go and waits (bounded: 30 s) until the streams drained; false
  // when they did not (then what they use is left allocated, and so must be what they read).
  // The destructor calls it when nobody did.
  bool drain();
  device::Device& device() const { return device_; }
  // Checks that every pointer of args (a validated kCuda call) is device memory of this stager's
  // device (Error(kInvalidArgument) naming the buffer otherwise, nothing enqueued), then enqueues
  // the call's device side (see above) and returns it.
  // `shape`: layoutStaged(args, rank, size, segmentBytes, nullptr), as the caller computed it.
  std::shared_ptr<StagedCall> stage(const algo::CollectiveArgs& args, const StagedLayout& shape,
                                    const char* what);
  // The same for a send or recv, on a stream of its own (one whose earlier message is done, or a
  // new one): a receive's copy waits on the device for its message, and messages are in no
  // order with each other or with the collectives, so none may wait behind another.
  std::shared_ptr<StagedCall> stageMessage(const algo::CollectiveArgs& args, const char* what);
  // A send or recv the transport moves itself (path.h, kDirect): no copies, only the
  // gates — ready(0) once the caller's stream is done with the buffer, and end after the flag
  // (raised when the message is done), on a message stream.
  std::shared_ptr<StagedCall> stageForFabric(const algo::CollectiveArgs& args, const char* what);
  // A collective of this stager's device through `peers` (ipc_peers.h): within one host
  // (hosts null; a call planIpc takes), or across hosts (a call planIpcAcrossHosts takes; peers
  // are the host's ranks by local index). Enqueues the device side of the plan and returns a call
  // whose segments are the plan's host steps: barriers (among the host's ranks) and exchanges
  // (with the counterparts, on pinned memory the call holds). Pointers are checked as stage()
  // does.
  std::shared_ptr<StagedCall> stageIpc(const algo::CollectiveArgs& args, IpcPeers& peers,
                                       const IpcHosts* hosts, const char* what);

 private:
  void checkPointers(const algo::CollectiveArgs& args, const StagedLayout& layout,
                     const char* what) const;
  void reap();
  // A message stream whose last message is done (or a new one), with that message (mutex_ held).
  std::pair<device::Stream, std::shared_ptr<StagedCall>>& freeMessageStream();
  // Enqueues a staged call on `stream` (mutex_ held).
  std::shared_ptr<StagedCall> enqueue(const algo::CollectiveArgs& args, const StagedLayout& shape,
                                      device::Stream stream, const char* what,
                                      bool onFabric = false);
  // A call of `segments` flags and dataBytes of pinned data, on `stream`, in flight and watched
  // (mutex_ held).
  std::shared_ptr<StagedCall> newCall(size_t segments, size_t dataBytes, device::Stream stream,
                                      const char* what);
  // Runs enqueueWork; if it throws half way, abandon()s the call first.
  template <typename Fn>
  void launch(const std::shared_ptr<StagedCall>& call, Fn enqueueWork);
  void enqueueCopies(StagedCall& call, const algo::CollectiveArgs& args);
  void enqueuePlan(StagedCall& call, const algo::CollectiveArgs& args,
                   const std::vector<IpcOp>& ops);
  // The last call in inflight_ failed half enqueued (mutex_ held): see stager.cc.
  void abandon(const std::shared_ptr<StagedCall>& call);

  device::Device& device_;
  const int ordinal_;
  const int rank_;
  const int size_;
  const size_t segmentBytes_;
  device::Stream stream_ = nullptr;
  std::shared_ptr<PinnedPool> pool_;
  std::mutex mutex_;  // guards inflight_ (and the order of what goes on stream_)
  std::deque<std::shared_ptr<StagedCall>> inflight_;
  // Streams of send and recv, each with the last message staged on it (free once that is done).
  std::vector<std::pair<device::Stream, std::shared_ptr<StagedCall>>> messageStreams_;
  int drained_ = -1;  // drain()'s outcome once called: 1 drained, 0 not
  std::unique_ptr<DeviceWatchdog> watchdog_;
};

}  // namespace smddp::planes
