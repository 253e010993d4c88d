// SPDX-License-Identifier: Apache-2.0
// NcclComm: one NCCL communicator, always non-blocking (ncclConfig_t.blocking = 0), so that no
// host thread ever waits inside NCCL without a bound: every call that answers ncclInProgress is
// polled (ncclCommGetAsyncError) until it settles, the deadline passes or `stop` says why to give
// up; then the communicator is aborted, which ends whatever NCCL still runs for it, on the host
// and on the device.
// Invariants: a communicator is aborted at most once and never used after; the destructor
// finalizes a healthy one (bounded) and aborts the others.
#pragma once

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "device/device.h"
#include "planes/nccl/nccl_api.h"

namespace smddp::planes::nccl {

using Clock = std::chrono::steady_clock;
// Why to stop waiting ("" to go on): the watch's verdict on the peers, an abort.
using StopReason = std::function<std::string()>;

class NcclComm {
 public:
  // Joins the communicator of `size` ranks named by `id` on `ordinal`; throws Error (kTimeout,
  // kPeerFailure, kInternal with NCCL's text) naming `what` when it cannot within `deadline`.
  static std::unique_ptr<NcclComm> init(const NcclApi& api, device::Device& device, int ordinal,
                                        const ncclUniqueId& id, int rank, int size,
                                        Clock::time_point deadline, const StopReason& stop,
                                        const std::string& what);
  // The communicator of the ranks of `parent` not in `excluded` (ncclCommShrink; the caller
  // checked api.commShrink). Every remaining rank calls it; `abortFirst`: NCCL_SHRINK_ABORT.
  static std::unique_ptr<NcclComm> shrink(NcclComm& parent, const std::vector<int>& excluded,
                                          bool abortFirst, Clock::time_point deadline,
                                          const StopReason& stop, const std::string& what);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  // Runs fn(comm) (an enqueue) unless the communicator is being aborted (then returns
  // ncclInvalidUsage without calling): abort() waits until no such call is inside.
  template <class Fn>
  ncclResult_t call(Fn fn) {
    inside_.fetch_add(1, std::memory_order_acq_rel);
    struct Leave {
      std::atomic<int>& inside;
      ~Leave() { inside.fetch_sub(1, std::memory_order_acq_rel); }
    } leave{inside_};
    if (aborting_.load(std::memory_order_acquire)) return ncclInvalidUsage;
    return fn(comm_);
  }
  const NcclApi& api() const { return api_; }
  int ordinal() const { return ordinal_; }
  bool aborted() const { return aborted_.load(std::memory_order_acquire); }
  // Polls until the last call's ncclInProgress settled: ncclSuccess, NCCL's error, or
  // ncclInProgress when the deadline passed or stop() gave a reason (in *why).
  ncclResult_t settle(ncclResult_t result, Clock::time_point deadline, const StopReason& stop,
                      std::string* why);
  // The communicator's asynchronous error (ncclSuccess while healthy); never blocks.
  ncclResult_t asyncError();
  // ncclCommAbort, once; idempotent and safe from any thread while another is inside a call on
  // it (NCCL's contract): NCCL's kernels and threads of the communicator end, so every stream
  // waiting on them goes on.
  void abort();
  std::string describe(ncclResult_t result) const { return api_.describe(result, comm_); }

 private:
  NcclComm(const NcclApi& api, device::Device& device, int ordinal, ncclComm_t comm);
  // Waits for a freshly made communicator to be ready; aborts it and throws when it is not.
  void awaitReady(ncclResult_t result, Clock::time_point deadline, const StopReason& stop,
                  const std::string& what);

  const NcclApi& api_;
  device::Device& device_;
  const int ordinal_;
  ncclComm_t comm_ = nullptr;
  std::atomic<bool> aborted_{false};
  std::atomic<bool> aborting_{false};  // set first: no new call() enters
  std::atomic<int> inside_{0};         // call()s in progress
  std::mutex abortMutex_;
};

// The non-blocking configuration every smddp communicator uses; `name` goes to NCCL's logs.
ncclConfig_t nonBlockingConfig(const char* name);

}  // namespace smddp::planes::nccl
