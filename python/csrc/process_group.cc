// SPDX-License-Identifier: Apache-2.0
// ProcessGroupSmddp's life (see process_group.h): joining, tracking for the exit hook,
// shutdown and abort, the Work every collective returns, and the 2.x Backend API (split,
// options, timeout, coalescing). The collectives are in process_group_collectives.cc.
#include "process_group.h"

#include <Python.h>

#include <c10/util/Exception.h>

#include <algorithm>
#include <mutex>
#include <utility>
#include <vector>

#include "coalesced_work.h"
#include "device_streams.h"
#include "store_adapter.h"

namespace smddp::torch_shim {

using ::c10d::OpType;

ProcessGroupSmddp::ProcessGroupSmddp(const c10::intrusive_ptr<::c10d::Store>& store, int rank,
                                     int size, std::chrono::milliseconds timeout,
                                     const std::string& name)
    : compat::BackendBase(rank, size),
      completions_(std::make_shared<CompletionQueue>()),
      timeoutMs_(timeout.count()),
      name_(name) {
  smddp::Options options;
  options.timeout = timeout;
  options.name = name;
  comm_ = Communicator::create(adaptStore(store), rank, size, options);
}

ProcessGroupSmddp::~ProcessGroupSmddp() { shutdown(); }

namespace {

// Releases the GIL for a blocking call when this thread holds it (torch's bindings may not have).
class WithoutGil {
 public:
  WithoutGil() {
    if (Py_IsInitialized() && PyGILState_Check()) saved_ = PyEval_SaveThread();
  }
  ~WithoutGil() {
    if (saved_ != nullptr) PyEval_RestoreThread(saved_);
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  PyThreadState* saved_ = nullptr;
};

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
  comm_.reset();  // waits (bounded) for pending collectives; their completions still run
  completions_->stop();
}

Communicator& ProcessGroupSmddp::comm() const {
  TORCH_CHECK(comm_ != nullptr, "smddp: rank ", rank_,
              ": this process group was shut down (destroy_process_group); create a new one");
  return *comm_;
}

void ProcessGroupSmddp::abort() {
  if (comm_) {
    comm_->abort();
  }
}

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
      rank_, opType, std::move(requests), std::move(outputs), std::move(staging), completions_,
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
    TORCH_CHECK(r >= 0 && r < size_, "smddp: rank ", rank_, ": split: rank ", r,
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
  TORCH_CHECK(timeout.count() > 0, "smddp: rank ", rank_,
              ": setTimeout needs a positive timeout, got ", timeout.count(), " ms");
  comm().setTimeout(timeout);  // the engine's bound for the collectives issued from now on
  timeoutMs_.store(timeout.count(), std::memory_order_relaxed);
}

void ProcessGroupSmddp::startCoalescing() {
  require2x("coalescing");
  if (coalescing_) {
    // torch's _coalescing_manager does not end a block left by an exception: start afresh (the
    // collectives of that block are posted and finish on their own).
    TORCH_WARN("smddp: rank ", rank_, ": startCoalescing while ", coalesced_.size(),
               " collective(s) of an unfinished coalescing block were pending; starting anew");
  }
  coalescing_ = true;
  coalesced_.clear();
}

c10::intrusive_ptr<::c10d::Work> ProcessGroupSmddp::endCoalescing() {
  require2x("coalescing");
  TORCH_CHECK(coalescing_, "smddp: rank ", rank_, ": endCoalescing without startCoalescing");
  coalescing_ = false;
  return c10::make_intrusive<CoalescedWork>(rank_, std::move(coalesced_));
}

}  // namespace smddp::torch_shim
