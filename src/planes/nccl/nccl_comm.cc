// SPDX-License-Identifier: Apache-2.0
// NcclComm (nccl_comm.h): init, shrink, settle, abort.
#include "planes/nccl/nccl_comm.h"

#include <thread>

#include "smddp/error.h"

namespace smddp::planes::nccl {
namespace {

// Polls ncclCommGetAsyncError with growing sleeps: a non-blocking call settles in microseconds
// to seconds (init connects to every peer).
void pause(std::chrono::microseconds& step) {
  std::this_thread::sleep_for(step);
  step = std::min(step * 2, std::chrono::microseconds(2000));
}

}  // namespace

ncclConfig_t nonBlockingConfig(const char* name) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = name;
  return config;
}

NcclComm::NcclComm(const NcclApi& api, device::Device& device, int ordinal, ncclComm_t comm)
    : api_(api), device_(device), ordinal_(ordinal), comm_(comm) {}

std::unique_ptr<NcclComm> NcclComm::init(const NcclApi& api, device::Device& device, int ordinal,
                                         const ncclUniqueId& id, int rank, int size,
                                         Clock::time_point deadline, const StopReason& stop,
                                         const std::string& what) {
  ncclConfig_t config = nonBlockingConfig("smddp");
  ncclComm_t comm = nullptr;
  ncclResult_t r;
  {
    device::CurrentDevice current(device, ordinal);  // NCCL takes the current device
    r = api.commInitRankConfig(&comm, size, id, rank, &config);
  }
  if (comm == nullptr) {
    throw Error(ErrorCode::kInternal, what + ": ncclCommInitRankConfig: " +
                                          api.describe(r, nullptr));
  }
  std::unique_ptr<NcclComm> c(new NcclComm(api, device, ordinal, comm));
  c->awaitReady(r, deadline, stop, what + ": forming the NCCL communicator");
  return c;
}

std::unique_ptr<NcclComm> NcclComm::shrink(NcclComm& parent, const std::vector<int>& excluded,
                                           bool abortFirst, Clock::time_point deadline,
                                           const StopReason& stop, const std::string& what) {
  const NcclApi& api = parent.api_;
  ncclConfig_t config = nonBlockingConfig("smddp");
  ncclComm_t comm = nullptr;
  std::vector<int> list = excluded;
  ncclResult_t r;
  {
    device::CurrentDevice current(parent.device_, parent.ordinal_);
    r = parent.call([&](ncclComm_t p) {
      return api.commShrink(p, list.data(), static_cast<int>(list.size()), &comm, &config,
                            abortFirst ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT);
    });
  }
  if (comm == nullptr) {
    throw Error(ErrorCode::kInternal, what + ": ncclCommShrink: " + api.describe(r, parent.comm_));
  }
  std::unique_ptr<NcclComm> c(new NcclComm(api, parent.device_, parent.ordinal_, comm));
  c->awaitReady(r, deadline, stop, what + ": shrinking the NCCL communicator");
  return c;
}

void NcclComm::awaitReady(ncclResult_t result, Clock::time_point deadline, const StopReason& stop,
                          const std::string& what) {
  std::string why;
  const ncclResult_t r = settle(result, deadline, stop, &why);
  if (r == ncclSuccess) return;
  abort();
  if (r == ncclInProgress) {
    const bool late = why.empty();
    throw Error(late ? ErrorCode::kTimeout : ErrorCode::kPeerFailure,
                what + (late ? ": not ready by the communicator's timeout (a peer has not "
                               "joined)"
                             : ": " + why));
  }
  throw Error(ErrorCode::kInternal, what + ": " + describe(r));
}

ncclResult_t NcclComm::settle(ncclResult_t result, Clock::time_point deadline,
                              const StopReason& stop, std::string* why) {
  auto step = std::chrono::microseconds(1);
  while (result == ncclInProgress) {
    if (aborted()) return ncclInProgress;
    ncclResult_t state = ncclSuccess;
    const ncclResult_t asked =
        call([&](ncclComm_t c) { return api_.commGetAsyncError(c, &state); });
    if (aborting_.load()) return ncclInProgress;
    if (asked != ncclSuccess) return asked;
    if (state != ncclInProgress) return state;
    if (stop) {
      const std::string reason = stop();
      if (!reason.empty()) {
        if (why != nullptr) *why = reason;
        return ncclInProgress;
      }
    }
    if (Clock::now() > deadline) return ncclInProgress;
    pause(step);
  }
  return result;
}

ncclResult_t NcclComm::asyncError() {
  ncclResult_t state = ncclSuccess;
  const ncclResult_t asked =
      call([&](ncclComm_t c) { return api_.commGetAsyncError(c, &state); });
  if (aborting_.load()) return ncclSuccess;
  return asked != ncclSuccess ? asked : state;
}

void NcclComm::abort() {
  std::lock_guard<std::mutex> lock(abortMutex_);
  if (aborted_.load()) return;
  aborting_.store(true, std::memory_order_release);
  // Non-blocking calls return at once: a call still inside leaves within microseconds. One that
  // does not within the bound is inside NCCL for good; aborting then is what frees it.
  const auto bound = Clock::now() + std::chrono::seconds(2);
  while (inside_.load(std::memory_order_acquire) > 0 && Clock::now() < bound) {
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  device::CurrentDevice current(device_, ordinal_);
  api_.commAbort(comm_);
  aborted_.store(true, std::memory_order_release);
}

NcclComm::~NcclComm() {
  if (aborted()) return;
  // A healthy communicator is finalized (its last operations flushed) and destroyed, bounded:
  // a peer that is gone can keep finalize from settling; it is aborted then.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  device::CurrentDevice current(device_, ordinal_);
  ncclResult_t r = call([&](ncclComm_t c) { return api_.commFinalize(c); });
  if (r == ncclSuccess || r == ncclInProgress) r = settle(r, deadline, nullptr, nullptr);
  if (r != ncclSuccess) {
    abort();
    return;
  }
  api_.commDestroy(comm_);
  aborted_.store(true);
}

}  // namespace smddp::planes::nccl
