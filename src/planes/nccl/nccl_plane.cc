// SPDX-License-Identifier: Apache-2.0
// NcclPlane (nccl_plane.h): posting, the watchdog, failing (the formation: nccl_plane_form.cc).
#include "planes/nccl/nccl_plane.h"

#include <algorithm>
#include <cstring>

#include "planes/nccl/nccl_api.h"
#include "planes/nccl/nccl_calls.h"
#include "planes/nccl/nccl_comm.h"
#include "planes/nccl/nccl_pairs.h"
#include "planes/nccl/nccl_types.h"
#include "smddp/helper_thread.h"

namespace smddp::planes::nccl {
namespace {

// The watchdog's pace: works are checked every kPoll while some are pending (their completion
// reaches host waiters and callbacks within it), NCCL's asynchronous errors every kErrorPoll.
constexpr std::chrono::microseconds kPoll{200};
constexpr std::chrono::milliseconds kErrorPoll{20};
constexpr std::chrono::milliseconds kIdlePoll{100};

}  // namespace

const NcclApi* loadNccl(const std::string& device, std::string* why, std::string* name) {
  const NcclApi* api = ncclApi(device, why);
  if (api != nullptr && name != nullptr) *name = api->name();
  return api;
}

int versionOf(const NcclApi& api) { return api.version; }

bool hasShrink(const NcclApi& api) { return api.commShrink != nullptr; }

std::string refusal(const Call& call) { return ncclRefusal(call); }

std::shared_ptr<void> memAlloc(const NcclApi& api, device::Device& device, int ordinal,
                               size_t bytes) {
  if (api.memAlloc == nullptr || api.memFree == nullptr) return nullptr;
  void* p = nullptr;
  {
    device::CurrentDevice current(device, ordinal);  // NCCL allocates on the current device
    const ncclResult_t r = api.memAlloc(&p, std::max<size_t>(bytes, 1));
    if (r != ncclSuccess || p == nullptr) {
      throw Error(ErrorCode::kInternal, "smddp: ncclMemAlloc of " + std::to_string(bytes) +
                                            " bytes: " + api.describe(r, nullptr));
    }
  }
  const NcclApi* a = &api;  // loaded once per process, never unloaded
  device::Device* d = &device;
  return std::shared_ptr<void>(p, [a, d, ordinal](void* q) {
    try {
      device::CurrentDevice current(*d, ordinal);
      a->memFree(q);  // as cudaFree: after the device is done with it
    } catch (...) {  // a deleter: the memory stays allocated
    }
  });
}

std::string newUniqueId(const NcclApi& api) {
  ncclUniqueId id{};
  const ncclResult_t r = api.getUniqueId(&id);
  if (r != ncclSuccess) {
    throw Error(ErrorCode::kInternal, "smddp: ncclGetUniqueId: " + api.describe(r, nullptr));
  }
  return std::string(id.internal, sizeof(id.internal));
}

NcclPlane::NcclPlane(const NcclPlaneSetup& setup, Clock::time_point deadline) : setup_(setup) {
  stream_ = setup_.device->createStream(setup_.ordinal);
  auto stop = [this] { return stopReason(); };
  auto fail = [this](NcclWork& work, ErrorCode code, const std::string& cause) {
    work.settle(std::make_exception_ptr(setup_.hooks.errorFor(work, code, cause, true)));
  };
  pairs_ = std::make_unique<NcclPairs>(*setup_.api, *setup_.device, setup_.ordinal, setup_.rank,
                                       setup_.store, setup_.prefix, stop, fail);
  thread_ = startHelperThread("smddp-nccl", [this] { watch(); });
  former_ = startHelperThread("smddp-nccl-init", [this, deadline] { form(deadline); });
}

NcclPlane::~NcclPlane() {
  closing_.store(true, std::memory_order_release);
  if (former_.joinable()) former_.join();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // What is still pending was never waited for: the communicator goes away under it.
  if (pending() > 0) fail(ErrorCode::kAborted, "the communicator was destroyed");
  pairs_.reset();
  comm_.reset();  // finalizes a healthy communicator (bounded), or it is aborted already
  setup_.device->destroyStream(stream_);
}

std::shared_ptr<NcclWork> NcclPlane::newWork(const algo::CollectiveArgs& args,
                                             device::Stream stream, std::string what,
                                             Clock::time_point deadline,
                                             NcclWork::Completion done) {
  device::Device& d = *setup_.device;
  device::Event start = d.createEvent(setup_.ordinal);
  device::Event end = nullptr;
  try {
    end = d.createEvent(setup_.ordinal);
    d.record(start, args.stream);  // after the work queued on the caller's stream
  } catch (...) {
    d.destroyEvent(start);
    d.destroyEvent(end);
    throw;
  }
  auto work = std::make_shared<NcclWork>(d, stream, start, end, std::move(what), deadline,
                                         std::move(done));
  work->planeFailed = &failed_;
  return work;
}

std::shared_ptr<NcclWork> NcclPlane::post(const algo::CollectiveArgs& args, std::string what,
                                          Clock::time_point deadline, NcclWork::Completion done) {
  auto work = newWork(args, stream_, std::move(what), deadline, std::move(done));
  std::lock_guard<std::mutex> order(enqueueMutex_);
  if (failed()) {
    work->markReady();
    settleFailed(*work);
    return work;
  }
  track(work);
  if (!formed_.load(std::memory_order_acquire)) {
    held_.push_back(Held{work, args});  // enqueued in order once the communicator is formed
    return work;
  }
  enqueue(work, args);
  return work;
}

void NcclPlane::enqueue(const std::shared_ptr<NcclWork>& work, const algo::CollectiveArgs& args) {
  device::Device& d = *setup_.device;
  device::CurrentDevice current(d, setup_.ordinal);
  d.streamWait(stream_, work->start());
  const auto stream = static_cast<cudaStream_t>(stream_);
  ncclResult_t r = comm_->call([&](ncclComm_t c) {
    return enqueueCollective(*setup_.api, c, args, setup_.rank, setup_.size, stream, d);
  });
  std::string why;
  auto stop = [this]() -> std::string { return failed() ? std::string("the plane failed") : ""; };
  r = comm_->settle(r, work->deadline(), stop, &why);
  d.record(work->end(), stream_);
  work->markReady();
  if (r != ncclSuccess && !failed()) {
    fail(r == ncclRemoteError ? ErrorCode::kPeerFailure : ErrorCode::kInternal,
         r == ncclInProgress ? "NCCL did not take the call by its deadline"
                             : "NCCL refused the call: " + comm_->describe(r));
  }
}

std::shared_ptr<NcclWork> NcclPlane::postMessage(const algo::CollectiveArgs& args, int peer,
                                                 std::string what, Clock::time_point deadline,
                                                 NcclWork::Completion done) {
  auto work = newWork(args, pairs_->streamFor(args.kind, peer), std::move(what), deadline,
                      std::move(done));
  if (failed()) {
    work->markReady();
    settleFailed(*work);
    return work;
  }
  track(work);
  device::CurrentDevice current(*setup_.device, setup_.ordinal);
  pairs_->post(work, args, peer);
  return work;
}

void NcclPlane::track(const std::shared_ptr<NcclWork>& work) {
  bool idle;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    idle = pending_.empty();
    pending_.push_back(work);
  }
  if (idle) wake_.notify_all();  // a busy watchdog polls anyway: no wake-up per call
}

std::shared_ptr<NcclComm> NcclPlane::healthyComm() const {
  if (!formed_.load(std::memory_order_acquire) || failed()) return nullptr;
  return comm_;
}

std::string NcclPlane::formedBy() const {
  return formed_.load(std::memory_order_acquire) ? formedBy_ : std::string();
}

size_t NcclPlane::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return pending_.size();
}

void NcclPlane::settleFailed(NcclWork& work) {
  ErrorCode code;
  std::string cause;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    code = failCode_;
    cause = failCause_;
  }
  work.settle(std::make_exception_ptr(setup_.hooks.errorFor(work, code, cause, false)));
}

void NcclPlane::fail(ErrorCode code, const std::string& cause) {
  std::vector<std::shared_ptr<NcclWork>> pending;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_.load()) return;
    failCode_ = code;
    failCause_ = cause;
    failed_.store(true, std::memory_order_release);
    pending = pending_;
  }
  if (setup_.hooks.failed) setup_.hooks.failed(code, cause);
  // Aborted first, so that every stream waiting on NCCL goes on (the kernels end); the works
  // then settle with the failure, the oldest as the one that met it. A communicator still
  // forming gives up by itself (stopReason), and its held works are never enqueued.
  if (formed_.load(std::memory_order_acquire)) comm_->abort();
  pairs_->abortAll();
  bool first = true;
  for (auto& w : pending) {
    if (w->pair < 0 && !w->ready()) w->markReady();  // held: no device work will follow
    if (w->settled()) continue;
    w->settle(std::make_exception_ptr(setup_.hooks.errorFor(*w, code, cause, first && w->pair < 0)));
    if (w->pair < 0) first = false;
  }
  wake_.notify_all();
}

bool NcclPlane::sweep(ErrorCode* code, std::string* cause) {
  std::vector<std::shared_ptr<NcclWork>> works;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    works = pending_;
  }
  const auto now = Clock::now();
  bool found = false;
  for (auto& w : works) {
    // A message whose pair is still forming is not ready: its helper fails it at the deadline.
    if (w->settled() || !w->ready()) continue;
    if (setup_.device->done(w->end())) {
      if (failed()) continue;  // its kernel may have ended by the abort: fail() settles it
      w->settle(nullptr);
    } else if (now > w->deadline()) {
      const std::string why = "not finished on NCCL within its timeout (" +
                              std::to_string(setup_.timeout().count()) + " ms)";
      if (w->pair >= 0) {
        pairs_->expire(*w, why);
      } else if (!found) {
        *code = ErrorCode::kTimeout;
        *cause = why;
        found = true;
      }
    }
  }
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [](const std::shared_ptr<NcclWork>& w) { return w->settled(); }),
                 pending_.end());
  return found;
}

void NcclPlane::watch() {
  auto lastErrors = Clock::now();
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    const bool busy = !pending_.empty();
    wake_.wait_for(lock, busy ? kPoll : std::chrono::microseconds(kIdlePoll));
    if (stop_) break;
    lock.unlock();
    ErrorCode code = ErrorCode::kInternal;
    std::string cause;
    bool failure = false;
    try {
      failure = sweep(&code, &cause);
      if (!failure && !failed() && pending() > 0 && setup_.hooks.verdict) {
        cause = setup_.hooks.verdict(&code);
        failure = !cause.empty();
      }
      const auto now = Clock::now();
      if (!failure && !failed() && now - lastErrors > kErrorPoll) {
        lastErrors = now;
        const ncclResult_t r =
            formed_.load(std::memory_order_acquire) ? comm_->asyncError() : ncclSuccess;
        if (r != ncclSuccess && r != ncclInProgress) {
          code = r == ncclRemoteError ? ErrorCode::kPeerFailure : ErrorCode::kInternal;
          cause = "NCCL reported an error: " + comm_->describe(r);
          failure = true;
        }
        pairs_->checkErrors();
      }
    } catch (const std::exception& e) {
      code = ErrorCode::kInternal;
      cause = std::string("the NCCL plane's watchdog: ") + e.what();
      failure = true;
    }
    if (failure && !failed()) fail(code, cause);
    lock.lock();
  }
}

}  // namespace smddp::planes::nccl
