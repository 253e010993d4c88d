// SPDX-License-Identifier: Apache-2.0
// NcclPlane: the NCCL data plane of one smddp communicator whose ranks each hold a GPU of their
// own. NCCL moves the data; smddp keeps its guarantees on top:
//   - order, as ProcessGroupNCCL: a call's NCCL work goes on the plane's communication stream
//     after it waited (on the device) for the work queued before on the caller's stream; an
//     event after it is what the caller's stream, a Future or a host wait waits on;
//   - nothing blocks for good: the plane's watchdog thread settles each work when its event
//     completes, and fails the plane — aborting every NCCL communicator of it, which ends their
//     kernels, so no stream and no thread stays blocked — when a work outlives its deadline,
//     NCCL reports an error, or the hooks' verdict names a peer that died, stopped or called
//     something else (the watch's beacons, out of band: the device path pays nothing per call);
//   - messages (send/recv) run on a communicator per ordered pair of ranks (nccl_pairs.h), so
//     they are in no order with the collectives and a pair's two directions never wait on
//     each other.
//   - no post waits for a peer: the group's communicator is formed on a helper thread (rank 0
//     makes its id and publishes it in the store; every rank joins a non-blocking NCCL
//     communicator), and the collectives posted meanwhile are held and enqueued in order once
//     it is ready (their device work is not ready() until then), as a pair's messages are.
// Invariants: works are posted in the communicator's call order (the caller serializes posts)
// and enqueued in that order; every work settles exactly once; after the first failure every
// later post fails at once, and nothing more is enqueued.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/collective.h"
#include "device/device.h"
#include "planes/nccl/nccl_work.h"
#include "smddp/error.h"
#include "smddp/store.h"

namespace smddp::planes::nccl {

struct NcclApi;
class NcclComm;
class NcclPairs;

// The process's NCCL for `device` ("cuda", "fake"), or null with the reason in *why
// (nccl_api.h). Its name ("NCCL 2.30.7 (path)") in *name when loaded.
const NcclApi* loadNccl(const std::string& device, std::string* why, std::string* name = nullptr);
// Its NCCL_VERSION_CODE.
int versionOf(const NcclApi& api);
// Whether the loaded NCCL has ncclCommShrink.
bool hasShrink(const NcclApi& api);
// The communicator a shrunk group's plane may be derived from (NcclPlaneSetup::shrinkOf).
struct ShrinkOf {
  std::shared_ptr<NcclComm> parent;  // the parent's, formed and healthy; null: none to shrink
  std::vector<int> excluded;         // parent ranks left out
};
// "" when NCCL runs `call` as smddp defines it; else why not (nccl_types.h).
std::string refusal(const Call& call);
// `bytes` of memory of device `ordinal` from ncclMemAlloc (memory NCCL can register), given back
// with ncclMemFree when the last owner goes; null when the loaded NCCL lacks the call. Throws
// Error(kInternal) with NCCL's text when it fails.
std::shared_ptr<void> memAlloc(const NcclApi& api, device::Device& device, int ordinal,
                               size_t bytes);
// A fresh ncclUniqueId as bytes (NCCL_UNIQUE_ID_BYTES of them).
std::string newUniqueId(const NcclApi& api);

struct NcclPlaneHooks {
  // The verdict on the peers ("" while none; its code in *code): a peer dead, stopped, failed,
  // or a mismatch.
  std::function<std::string(ErrorCode*)> verdict;
  // The error `work` fails with when the plane fails with (code, cause); `first`: the oldest
  // pending work, which met it.
  std::function<Error(const NcclWork& work, ErrorCode code, const std::string& cause, bool first)>
      errorFor;
  // The plane failed (called once, before any work settles with it).
  std::function<void(ErrorCode code, const std::string& cause)> failed;
};

struct NcclPlaneSetup {
  const NcclApi* api = nullptr;
  device::Device* device = nullptr;
  int ordinal = 0;
  int rank = 0;
  int size = 1;
  std::string who;  // "smddp: rank R/N (host)"
  std::shared_ptr<Store> store;  // the communicator's: the group's and the pairs' ids
  std::string prefix;            // its keys' prefix
  std::function<std::chrono::milliseconds()> timeout;
  NcclPlaneHooks hooks;
  // Set for a group made by shrinking another: every rank said (prefix/nccl/shrink/<rank>)
  // whether it can derive the communicator from the parent's by ncclCommShrink; when all can,
  // the formation does, else it forms one anew.
  std::optional<ShrinkOf> shrinkOf;
};

class NcclPlane {
 public:
  using Clock = std::chrono::steady_clock;

  // Starts forming the group's communicator (every rank of the group, at its first call on the
  // plane) and returns at once; the formation fails the plane when it cannot finish by
  // `deadline` or the verdict names a peer.
  explicit NcclPlane(const NcclPlaneSetup& setup, Clock::time_point deadline);
  // Stops the formation and the watchdog (settling what is left as aborted), then finalizes or
  // aborts NCCL.
  ~NcclPlane();
  NcclPlane(const NcclPlane&) = delete;
  NcclPlane& operator=(const NcclPlane&) = delete;

  int ordinal() const { return setup_.ordinal; }
  device::Stream stream() const { return stream_; }
  // Enqueues a collective (validated, on device memory of ordinal(), refusal() empty) after
  // the work queued on args.stream; returns its work, which `done` is called for when it settles.
  // Never throws once the work exists: a failure settles it.
  std::shared_ptr<NcclWork> post(const algo::CollectiveArgs& args, std::string what,
                                 Clock::time_point deadline, NcclWork::Completion done);
  // A send or recv (args.kind) with `peer` on the pair's communicator.
  std::shared_ptr<NcclWork> postMessage(const algo::CollectiveArgs& args, int peer,
                                        std::string what, Clock::time_point deadline,
                                        NcclWork::Completion done);
  // Fails the plane (abort(), a reconfigure): every pending work and every later post fail;
  // the NCCL communicators are aborted.
  void fail(ErrorCode code, const std::string& cause);
  bool failed() const { return failed_.load(std::memory_order_acquire); }
  // Works posted and not yet settled.
  size_t pending() const;
  // The formed communicator while the plane is healthy (null before, or once failed): what a
  // group shrunk from this one derives its own from.
  std::shared_ptr<NcclComm> healthyComm() const;
  // How the communicator was made ("ncclCommInitRankConfig", "ncclCommShrink"); "" until formed.
  std::string formedBy() const;

 private:
  struct Held {
    std::shared_ptr<NcclWork> work;
    algo::CollectiveArgs args;
  };
  // The formation (nccl_plane_form.cc), on former_: the id through the store, the communicator,
  // then the held works in order; fails the plane when any of it fails.
  void form(Clock::time_point deadline);
  std::string exchangeId(Clock::time_point deadline);
  std::unique_ptr<NcclComm> formAnew(Clock::time_point deadline);  // the id, then init
  // Whether every rank said it can shrink from its parent (bounded by `deadline`).
  bool everyRankCanShrink(Clock::time_point deadline);
  // Reads `key` from the store in slices until the deadline or stopReason() (Error otherwise).
  std::string awaitKey(const std::string& key, Clock::time_point deadline,
                       const std::string& what);
  // Why the formation stops waiting ("" to go on): shutting down, the plane failed, a verdict.
  std::string stopReason();
  // Enqueues a collective on the formed communicator (enqueueMutex_ held): the work waits for
  // its start event, runs, records its end; a refusal or an unsettled call fails the plane.
  void enqueue(const std::shared_ptr<NcclWork>& work, const algo::CollectiveArgs& args);
  std::shared_ptr<NcclWork> newWork(const algo::CollectiveArgs& args, device::Stream stream,
                                    std::string what, Clock::time_point deadline,
                                    NcclWork::Completion done);
  void track(const std::shared_ptr<NcclWork>& work);
  void watch();  // the watchdog thread
  // One pass: settles finished works; returns a failure (code, cause) found, if any.
  bool sweep(ErrorCode* code, std::string* cause);
  // Settles `work` at once with the plane's failure (a post after the plane failed).
  void settleFailed(NcclWork& work);

  NcclPlaneSetup setup_;
  std::shared_ptr<NcclComm> comm_;  // set once formed_ (under enqueueMutex_)
  std::atomic<bool> formed_{false};
  std::string formedBy_;  // set before formed_
  std::atomic<bool> closing_{false};  // the destructor runs: the formation gives up
  std::mutex enqueueMutex_;  // orders posts against the formation's flush of held_
  std::deque<Held> held_;    // posted before formed_, in order
  device::Stream stream_ = nullptr;
  std::unique_ptr<NcclPairs> pairs_;
  mutable std::mutex mutex_;  // guards pending_, the failure, stop_
  std::condition_variable wake_;
  std::vector<std::shared_ptr<NcclWork>> pending_;
  std::atomic<bool> failed_{false};
  ErrorCode failCode_ = ErrorCode::kInternal;
  std::string failCause_;
  bool stop_ = false;
  std::thread thread_;  // the watchdog
  std::thread former_;  // last
};

}  // namespace smddp::planes::nccl
