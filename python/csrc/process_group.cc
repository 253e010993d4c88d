// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's life (see process_group.h): joining, tracking for the exit hook,
// shutdown and abort, the Work every collective returns, and the 2.x Backend API (split,
// options, timeout, coalescing). The collectives are in process_group_collectives.cc.
#include "process_group.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "coalesced_work.h"
#include "device_streams.h"
#include "profiler_marks.h"
#include "smddp/error.h"
#include "store_adapter.h"
#include "without_gil.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

ProcessGroupSmddp::ProcessGroupSmddp(const c10::intrusive_ptr<::c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout,
                                     const std::string& name, bool reconfigure,
                                     const std::optional<std::string>& generation)
    : compat::BackendBase(rank, size),
      store_(store),
      shared_(std::make_shared<WorkShared>(
          WorkShared{std::make_shared<CompletionQueue>(), slot_.gate(),
                     std::make_shared<GroupHooks>()})),
      self_(MemberHandle::self(name)),
      timeoutMs_(timeout.count()),
      name_(name) {
  if (reconfigure) return;  // no communicator until reconfigure() forms one
  auto comm = open(rank, size, timeout, generation);
  slot_.replace(std::move(comm), std::nullopt, timeout, rank, [] {});
}

ProcessGroupSmddp::~ProcessGroupSmddp() { shutdown(); }

std::shared_ptr<Communicator> ProcessGroupSmddp::open(
    int rank, int size, std::chrono::milliseconds timeout,
    const std::optional<std::string>& generation) const {
  smddp::Options options;
  options.timeout = timeout;
  options.name = name_;
  options.generation = generation;
  auto comm = Communicator::create(adaptStore(store_), rank, size, options);
  // The hooks, not the group: a communicator may outlive nothing of the group but its hooks.
  comm->setFailureHook([hooks = shared_->hooks, rank](ErrorCode, const std::string&) {
    hooks->runAbort(rank);
  });
  return comm;
}

namespace {

std::mutex liveMutex;
std::vector<c10::weak_intrusive_ptr<ProcessGroupSmddp>> liveGroups;  // guarded by liveMutex
}  // namespace

void ProcessGroupSmddp::track(const c10::intrusive_ptr<ProcessGroupSmddp>& group) {
  std::lock_guard<std::mutex> lock(liveMutex);
  liveGroups.erase(std::remove_if(liveGroups.begin(), liveGroups.end(),
                                  [](const auto& weak) { return weak.expired(); }),
                   liveGroups.end());
  liveGroups.emplace_back(group);
}

void ProcessGroupSmddp::shutdownLive() {
  std::vector<c10::intrusive_ptr<ProcessGroupSmddp>> alive;
  {
    std::lock_guard<std::mutex> lock(liveMutex);
    for (auto& weak : liveGroups) {
      if (auto group = weak.lock()) alive.push_back(std::move(group));
    }
    liveGroups.clear();
  }
  // Outside the lock: a shutdown may wait (bounded) for collectives, and must not hold up
  // groups being made or destroyed meanwhile.
  for (auto& group : alive) group->shutdown();
}

void ProcessGroupSmddp::shutdown() {
  // Joining the completion thread may wait on a Future callback that needs the GIL: never hold
  // it here (the destructor can run from Python's deallocator, shutdown() from a binding).
  WithoutGil noGil;
  shutDown_ = true;  // a reconfigure under way finishes first (bounded by its timeout)
  {
    std::lock_guard<std::mutex> lock(reconfigureMutex_);
    // torch's FileStore removes its file when its last user lets go: not this group, after it
    // is shut down, even while Python still holds the group object.
    store_.reset();
  }
  // Waits (bounded) for pending collectives and for callers inside; their completions still run.
  try {
    slot_.replace(nullptr, std::nullopt, timeout() + std::chrono::seconds(5), rank_, [] {});
  } catch (const std::exception& e) {
    TORCH_WARN(e.what());
  }
  shared_->completions->stop();
}

CommUse ProcessGroupSmddp::enter() const {
  return slot_.enter([this] {
    TORCH_CHECK(!shutDown_, errorHead(rank_),
                ": this process group was shut down (destroy_process_group); create a new one");
    TORCH_CHECK(false, errorHead(rank_), " (", self_.describe(),
                "): this group was created with enable_reconfigure=True and has no communicator "
                "until reconfigure() forms one (see get_reconfigure_handle)");
  });
}

void ProcessGroupSmddp::abort() { slot_.abort("abort() called on the process group"); }

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::finish(
    OpType opType, SmddpWork::Requests requests, Tensors outputs, Staging staging,
    std::chrono::milliseconds perOpTimeout) {
  ++issued_;
  // CUDA tensors: registered copies go on the caller's stream now, after the results; in the
  // fake-device test mode the mirrors come back at completion.
  int device = -1;
  for (const auto& t : outputs) {
    if (t.defined() && t.is_cuda()) device = t.get_device();
  }
  staging.settleMirrors();
  markForProfiler(requests.data(), requests.size(), device);
  if (device >= 0 || fakeDeviceMode()) {
    const std::vector<Request> posted(requests.begin(), requests.end());
    if (device >= 0) {
      recordEngineStreams(outputs, posted, device);  // the engine reads and writes them there
      recordEngineStreams(staging.kept(), posted, device);
      staging.copyBackOnStream(posted, device);
    }
    std::vector<Mirror> mirrors = takeMirrors();
    if (!mirrors.empty()) staging.setMirrors(Mirrors(std::move(mirrors), posted));
  }
  c10::intrusive_ptr<Work> work = SmddpWork::create(
      rank_, opType, std::move(requests), std::move(outputs), std::move(staging), shared_,
      compat::effectiveTimeout(perOpTimeout, timeout()), timeout(), timing_, device);
  if (coalescing_) coalesced_.push_back(work);
  return work;
}

void ProcessGroupSmddp::keepPosted(OpType opType, SmddpWork::Requests requests, Tensors outputs,
                                   Staging staging) {
  if (requests.empty()) return;
  finish(opType, std::move(requests), std::move(outputs), std::move(staging),
         ::c10d::kUnsetTimeout);
}

// ---- the 2.x Backend API ------------------------------------------------------------------------

namespace {

void require2x(const char* what) {
  TORCH_CHECK(compat::kBackendApi, "smddp: ", what, " needs torch >= 2.11 (this is torch ",
              compat::torchVersion(), ")");
}

}  // namespace

c10::intrusive_ptr<compat::BackendBase> ProcessGroupSmddp::split(
    const c10::intrusive_ptr<::c10d::Store>& store, const std::vector<int>& ranks,
    const c10::intrusive_ptr<Options>& opts) {
  require2x("split");
  for (int r : ranks) {
    TORCH_CHECK(r >= 0 && r < size_, errorHead(rank_), ": split: rank ", r,
                " is not a rank of this group of size ", size_);
  }
  auto mine = std::find(ranks.begin(), ranks.end(), rank_);
  if (mine == ranks.end()) return {};  // not a member: torch returns NON_GROUP_MEMBER
  const auto childTimeout = opts && opts->timeout.count() > 0 ? opts->timeout : timeout();
  // torch prefixes the store with the child's group name; the engine's name keeps the child's
  // keys apart from any other communicator on the same store as well.
  const std::string childName =
      opts && !opts->group_name.empty() ? std::string("smddp.") + opts->group_name
                                        : name_ + ".split" + std::to_string(issued_);
  c10::intrusive_ptr<ProcessGroupSmddp> child;
  {
    WithoutGil noGil;  // the child bootstraps through the store: other ranks' Python may run
    child = c10::make_intrusive<ProcessGroupSmddp>(
        store, static_cast<int>(mine - ranks.begin()), static_cast<int>(ranks.size()),
        childTimeout, childName);
  }
  track(child);
  return child;
}

c10::intrusive_ptr<ProcessGroupSmddp::Options> ProcessGroupSmddp::getBackendOptions() {
  auto options = c10::make_intrusive<Options>(getBackendName(), timeout());
  options->group_name = name_;
  return options;
}

void ProcessGroupSmddp::setTimeout(std::chrono::milliseconds timeout) {
  TORCH_CHECK(timeout.count() > 0, errorHead(rank_), ": setTimeout needs a positive timeout, got ",
              timeout.count(), " ms");
  if (!slot_.empty()) enter().comm().setTimeout(timeout);  // the engine's bound from now on
  timeoutMs_.store(timeout.count(), std::memory_order_relaxed);
}

void ProcessGroupSmddp::startCoalescing() {
  require2x("coalescing");
  if (coalescing_) {
    // torch's _coalescing_manager does not end a block left by an exception: start afresh (the
    // collectives of that block are posted and finish on their own).
    TORCH_WARN(errorHead(rank_), ": startCoalescing while ", coalesced_.size(),
               " collective(s) of an unfinished coalescing block were pending; starting anew");
  }
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::endCoalescing() {
  require2x("coalescing");
  TORCH_CHECK(coalescing_, errorHead(rank_), ": endCoalescing without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(rank_, std::move(coalesced_));
}

}  // namespace smddp::torch_shim
