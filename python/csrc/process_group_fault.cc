// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's part in keeping a job alive through failures (see process_group.h):
// reconfigure (a new generation among members the application names, swapped in under the same
// group), shrink (a new group of the survivors), getError, and the abort and completion hooks.
// Both new communicators bootstrap through the group's store, which must therefore outlive the
// members that are left out (torchrun's agent store does; a store served by a lost rank does
// not).
#include <c10/util/Exception.h>

#include <algorithm>
#include <set>
#include <sstream>

#include "process_group.h"
#include "smddp/error.h"
#include "store_adapter.h"
#include "without_gil.h"

namespace smddp::torch_shim {

namespace {

// Callers inside a generation that was aborted leave within an engine poll.
constexpr std::chrono::milliseconds kAbortedLeave{10000};

std::string listOf(const std::vector<int64_t>& ranks) {
  std::ostringstream os;
  for (size_t i = 0; i < ranks.size(); ++i) os << (i ? ", " : "") << ranks[i];
  return os.str();
}

}  // namespace

std::string ProcessGroupSmddp::get_reconfigure_handle() const { return self_.encode(); }

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::reconfigure(
    const compat::ReconfigureOptions& opts) {
  TORCH_CHECK(compat::kReconfigureApi, "smddp: reconfigure needs torch >= 2.15 (this is torch ",
              compat::torchVersion(), ")");
  const bool ordered = std::holds_alternative<std::vector<std::string>>(opts.handles);
  std::vector<std::string> handles;
  if (ordered) {
    handles = std::get<std::vector<std::string>>(opts.handles);
  } else {
    const auto& set = std::get<std::unordered_set<std::string>>(opts.handles);
    handles.assign(set.begin(), set.end());
  }
  const std::string what = "reconfigure to generation " + std::to_string(opts.uuid) + " (" +
                           std::to_string(handles.size()) + " members)";
  int rank = -1;
  const std::vector<MemberHandle> members =
      orderMembers(handles, ordered, self_, &rank, rank_, what);
  const auto size = static_cast<int>(members.size());
  const auto bound = opts.timeout.value_or(timeout());
  TORCH_CHECK(bound.count() > 0, errorHead(rank_), ": ", what,
              ": the timeout must be positive, got ", bound.count(), " ms");
  std::lock_guard<std::mutex> serial(reconfigureMutex_);
  TORCH_CHECK(!shutDown_, errorHead(rank_), ": ", what, ": this process group was shut down");
  TORCH_CHECK(usedUuids_.insert(opts.uuid).second, errorHead(rank_), ": ", what, ": uuid ",
              opts.uuid, " was used before on this group; every reconfigure needs a fresh uuid");
  const std::string key = std::string("g").append(std::to_string(opts.uuid));
  std::shared_ptr<Communicator> next;
  {
    WithoutGil noGil;  // other members' Python may have to run for them to arrive
    auto store = adaptStore(store_);
    agreeOnMembers(*store, name_ + "/" + key, members, rank, bound, what);
    next = open(rank, size, bound, key);
    next->setTimeout(timeout());  // the group's bound for its collectives, as before
    const std::string reason = "the group was reconfigured to generation " +
                               std::to_string(opts.uuid) + " (" + std::to_string(size) +
                               " members); this collective belonged to the generation before";
    slot_.replace(std::move(next), reason, kAbortedLeave, rank_, [&] {
#if SMDDP_TORCH_RECONFIGURE
      rank_ = rank;
      size_ = size;
#endif
    });
  }
  uuid_.store(opts.uuid, std::memory_order_relaxed);
  return SmddpWork::create(rank_, ::c10d::OpType::UNKNOWN, {}, {}, Staging(), shared_, bound,
                           timeout());
}

c10::intrusive_ptr<compat::BackendBase> ProcessGroupSmddp::shrink(
    const std::vector<int64_t>& ranksToExclude, int flags,
    const c10::intrusive_ptr<Options>& opts) {
  TORCH_CHECK(compat::kBackendApi, "smddp: shrink needs torch >= 2.11 (this is torch ",
              compat::torchVersion(), ")");
  const std::string what = "shrink excluding rank(s) " + listOf(ranksToExclude);
  TORCH_CHECK(flags == 0 || flags == kShrinkAbort, errorHead(rank_), ": ", what,
              ": unknown shrink flags ", flags, " (SHRINK_DEFAULT 0 or SHRINK_ABORT 1)");
  TORCH_CHECK(!ranksToExclude.empty(), errorHead(rank_), ": ", what, ": no rank to exclude");
  std::set<int64_t> excluded;
  for (int64_t r : ranksToExclude) {
    TORCH_CHECK(r >= 0 && r < size_, errorHead(rank_), ": ", what, ": rank ", r,
                " is not a rank of this group of size ", size_);
    TORCH_CHECK(excluded.insert(r).second, errorHead(rank_), ": ", what, ": rank ", r,
                " is listed twice");
  }
  TORCH_CHECK(!excluded.count(rank_), errorHead(rank_), ": ", what,
              ": this rank is excluded; only the remaining ranks call shrink");
  TORCH_CHECK(static_cast<int>(excluded.size()) < size_, errorHead(rank_), ": ", what,
              ": no rank would remain");
  {
    std::lock_guard<std::mutex> lock(reconfigureMutex_);
    TORCH_CHECK(!shutDown_, errorHead(rank_), ": ", what, ": this process group was shut down");
  }
  if (flags & kShrinkAbort) slot_.abort(what + " with SHRINK_ABORT");
  // The survivors, in this group's rank order; described for the agreement by their rank here.
  std::vector<MemberHandle> members;
  int rank = -1;
  for (int r = 0; r < size_; ++r) {
    if (excluded.count(r)) continue;
    if (r == rank_) rank = static_cast<int>(members.size());
    members.push_back(MemberHandle{"", 0, "rank" + std::to_string(r), name_});
  }
  const auto childTimeout = opts && opts->timeout.count() > 0 ? opts->timeout : timeout();
  uint64_t serial = 0;
  {
    std::lock_guard<std::mutex> lock(reconfigureMutex_);
    serial = ++shrinks_;
  }
  // Each survivor counts its shrinks of this group: the same count names the same child.
  const std::string childName = name_ + ".shrink" + std::to_string(serial);
  const std::string key = std::string("x").append(std::to_string(excluded.size()));
  c10::intrusive_ptr<ProcessGroupSmddp> child;
  {
    WithoutGil noGil;  // other members' Python may have to run for them to arrive
    auto store = adaptStore(store_);
    agreeOnMembers(*store, childName + "/" + key, members, rank, childTimeout, what);
    child = c10::make_intrusive<ProcessGroupSmddp>(store_, rank, static_cast<int>(members.size()),
                                                   childTimeout, childName, false, key);
    if (!(flags & kShrinkAbort)) {
      // Without a loss the parent's NCCL communicator is healthy: the child's is shrunk from it
      // (ncclCommShrink, where NCCL has it) instead of a new rendezvous.
      std::vector<int> gone(excluded.begin(), excluded.end());
      child->enter().comm().shrinkDevicePlaneOf(enter().comm(), gone);
    }
  }
  track(child);
  return child;
}

compat::ErrorType ProcessGroupSmddp::getError() {
  const std::optional<ErrorCode> code = slot_.brokenCode();
  if (!code) return compat::ErrorType::SUCCESS;
  switch (*code) {
    case ErrorCode::kTimeout:
      return compat::ErrorType::TIMEOUT;
    case ErrorCode::kPeerFailure:
      return compat::ErrorType::REMOTE_ERROR;
    default:
      return compat::ErrorType::COMM_ERROR;
  }
}

void ProcessGroupSmddp::registerAbortHook(int64_t id, compat::AbortHook hook) {
  hooks().addAbort(id, std::move(hook));
}

void ProcessGroupSmddp::unregisterAbortHook(int64_t id) { hooks().removeAbort(id); }

void ProcessGroupSmddp::registerCompletionHook(int64_t id, compat::CompletionHook hook) {
  hooks().addCompletion(id, std::move(hook));
}

void ProcessGroupSmddp::unregisterCompletionHook(int64_t id) { hooks().removeCompletion(id); }

}  // namespace smddp::torch_shim
