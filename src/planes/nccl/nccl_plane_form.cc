// SPDX-License-Identifier: Apache-2.0
// NcclPlane (nccl_plane.h): forming the group's communicator on the helper thread, and the
// collectives held meanwhile enqueued in their order.
#include <algorithm>
#include <cstring>
#include <thread>

#include "planes/nccl/nccl_api.h"
#include "planes/nccl/nccl_comm.h"
#include "planes/nccl/nccl_plane.h"

namespace smddp::planes::nccl {
namespace {

// The store is asked in slices this long, so that a closing plane is not held up by a peer that
// never publishes.
constexpr std::chrono::milliseconds kIdSlice{100};

}  // namespace

std::string NcclPlane::stopReason() {
  if (closing_.load(std::memory_order_acquire)) return "the communicator was destroyed";
  if (failed()) {
    std::lock_guard<std::mutex> lock(mutex_);
    return failCause_;
  }
  ErrorCode code;
  return setup_.hooks.verdict ? setup_.hooks.verdict(&code) : std::string();
}

std::string NcclPlane::awaitKey(const std::string& key, Clock::time_point deadline,
                                const std::string& what) {
  std::string failure;
  while (true) {
    const std::string stop = stopReason();
    if (!stop.empty()) throw Error(ErrorCode::kPeerFailure, setup_.who + ": " + stop);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) break;
    try {
      return setup_.store->get(key, std::min(left, kIdSlice));
    } catch (const std::exception& e) {  // not there yet (or the store failed: said at the end)
      failure = e.what();
    }
  }
  throw Error(ErrorCode::kTimeout, setup_.who + ": " + what + " in time (" + failure + ")");
}

std::string NcclPlane::exchangeId(Clock::time_point deadline) {
  const std::string key = setup_.prefix + "/nccl/id";
  if (setup_.rank == 0) {
    const std::string id = newUniqueId(*setup_.api);
    setup_.store->set(key, id);
    return id;
  }
  return awaitKey(key, deadline, "rank 0 did not publish the NCCL communicator's id");
}

bool NcclPlane::everyRankCanShrink(Clock::time_point deadline) {
  bool all = true;
  for (int r = 0; r < setup_.size; ++r) {
    const std::string key = setup_.prefix + "/nccl/shrink/" + std::to_string(r);
    all = awaitKey(key, deadline, "rank " + std::to_string(r) + " did not say whether it can "
                                  "shrink its parent's NCCL communicator") == "1" && all;
  }
  return all;
}

std::unique_ptr<NcclComm> NcclPlane::formAnew(Clock::time_point deadline) {
  const std::string bytes = exchangeId(deadline);
  ncclUniqueId id{};
  if (bytes.size() != sizeof(id.internal)) {
    throw Error(ErrorCode::kInternal, setup_.who + ": the NCCL id in the store has " +
                                          std::to_string(bytes.size()) + " bytes, not " +
                                          std::to_string(sizeof(id.internal)));
  }
  std::memcpy(id.internal, bytes.data(), sizeof(id.internal));
  return NcclComm::init(*setup_.api, *setup_.device, setup_.ordinal, id, setup_.rank,
                        setup_.size, deadline, [this] { return stopReason(); }, setup_.who);
}

void NcclPlane::form(Clock::time_point deadline) {
  std::unique_ptr<NcclComm> comm;
  ErrorCode code = ErrorCode::kInternal;
  std::string cause;
  std::string by = "ncclCommInitRankConfig";
  try {
    if (setup_.shrinkOf && everyRankCanShrink(deadline)) {
      by = "ncclCommShrink";
      comm = NcclComm::shrink(*setup_.shrinkOf->parent, setup_.shrinkOf->excluded, false,
                              deadline, [this] { return stopReason(); }, setup_.who);
    } else {
      comm = formAnew(deadline);
    }
  } catch (const Error& e) {
    code = e.code() == ErrorCode::kInvalidArgument ? ErrorCode::kInternal : e.code();
    cause = "the NCCL communicator could not be formed (" + by + "): " + e.what();
  } catch (const std::exception& e) {
    code = ErrorCode::kStore;
    cause = "the NCCL communicator could not be formed (" + by + "): " + e.what();
  }
  if (setup_.shrinkOf) setup_.shrinkOf->parent.reset();  // the parent's may go now
  std::lock_guard<std::mutex> order(enqueueMutex_);
  if (comm && (failed() || closing_.load(std::memory_order_acquire))) {
    comm->abort();  // formed too late: the plane failed (its works with it) or is going away
    return;
  }
  if (!comm) {
    if (!failed()) fail(closing_.load() ? ErrorCode::kAborted : code, cause);
    return;
  }
  comm_ = std::move(comm);
  formedBy_ = by;
  formed_.store(true, std::memory_order_release);
  while (!held_.empty() && !failed()) {
    Held h = std::move(held_.front());
    held_.pop_front();
    enqueue(h.work, h.args);
  }
  held_.clear();  // after a failure: settled by fail()
}

}  // namespace smddp::planes::nccl
