// SPDX-License-Identifier: Apache-2.0
// CUDA calls on the NCCL plane (planes/nccl/nccl_plane.h), with smddp's bookkeeping around them:
// a sequence number taken in the engine's order, the watch (flight recorder, beacons: posted,
// started, finished), the communicator's broken state, and the plane's verdict hook (the
// beacons' failures, a same-host peer that exited or stopped, abort) that fails it.
#ifdef SMDDP_HAVE_NCCL_PLANE

#include "common/clock.h"
#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/device_planes.h"
#include "core/recycling_allocator.h"
#include "planes/nccl/nccl_plane.h"

namespace smddp::core {

using Clock = std::chrono::steady_clock;

planes::nccl::NcclPlane& CommunicatorImpl::ncclPlane(const algo::CollectiveArgs& args) {
  DevicePlanes& p = *planes_;
  std::lock_guard<std::mutex> lock(p.mutex);
  const std::string at = errorHead(rank_, size_, hostName()) + ": " + toString(args.kind) + ": ";
  if (p.nccl) {
    if (args.device != p.nccl->ordinal()) {
      throw Error(ErrorCode::kInvalidArgument,
                  at + "got CUDA memory of device " + std::to_string(args.device) +
                      ", but this communicator's NCCL plane is on device " +
                      std::to_string(p.nccl->ordinal()) + " (one device per rank)");
    }
    return *p.nccl;
  }
  device::Device* device = settings_.device != nullptr ? settings_.device : device::processDevice();
  std::string why;
  std::string name;
  const planes::nccl::NcclApi* api =
      device != nullptr ? planes::nccl::loadNccl(device->name(), &why, &name) : nullptr;
  if (api == nullptr) {
    throw Error(ErrorCode::kUnsupported, at + "the NCCL plane was chosen, but " + why);
  }
  if (args.device < 0 || args.device >= device->count()) {
    throw Error(ErrorCode::kInvalidArgument,
                at + "CUDA device " + std::to_string(args.device) + " does not exist (" +
                    std::to_string(device->count()) + " " + device->name() + " device(s))");
  }
  startPeerChecks();
  planes::nccl::NcclPlaneSetup setup;
  setup.api = api;
  setup.device = device;
  setup.ordinal = args.device;
  setup.rank = rank_;
  setup.size = size_;
  setup.who = errorHead(rank_, size_, hostName());
  setup.store = p.store;
  setup.prefix = p.prefix;
  setup.timeout = [this] { return timeout(); };
  setup.hooks.verdict = [this](ErrorCode* code) { return deviceVerdict(code); };
  const std::string who = setup.who;
  setup.hooks.errorFor = [who](const planes::nccl::NcclWork& work, ErrorCode code,
                               const std::string& cause, bool) {
    return Error(code, who + ": " + work.what() + ": " + cause);
  };
  setup.hooks.failed = [this, who](ErrorCode code, const std::string& cause) {
    const std::string reason = who + ": the NCCL plane failed: " + cause;
    if (code != ErrorCode::kAborted) SMDDP_WARN(rank_, reason);
    markBroken(code, reason);
  };
  if (p.shrinkAsked) {
    setup.shrinkOf = planes::nccl::ShrinkOf{std::move(p.shrinkParent), p.shrinkExcluded};
  }
  // Returns at once: the communicator forms on the plane's helper thread, every rank's first
  // call on the plane having started it (the calls meanwhile wait there, in order).
  p.nccl = std::make_shared<planes::nccl::NcclPlane>(setup, Clock::now() + timeout());
  SMDDP_INFO(rank_, "NCCL plane forming on " << device->name() << " device " << args.device
                                            << " with " << name);
  return *p.nccl;
}

void CommunicatorImpl::shrinkDevicePlaneOf(CommunicatorImpl& parent,
                                           const std::vector<int>& excluded) {
  std::shared_ptr<planes::nccl::NcclComm> comm;
  {
    std::lock_guard<std::mutex> lock(parent.planes_->mutex);
    if (parent.planes_->nccl) comm = parent.planes_->nccl->healthyComm();
  }
  device::Device* device = settings_.device != nullptr ? settings_.device : device::processDevice();
  std::string why;
  const planes::nccl::NcclApi* api =
      device != nullptr ? planes::nccl::loadNccl(device->name(), &why) : nullptr;
  const bool can = comm && api != nullptr && planes::nccl::hasShrink(*api);
  DevicePlanes& p = *planes_;
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    if (p.nccl) {
      throw Error(ErrorCode::kInvalidArgument,
                  errorHead(rank_, hostName()) +
                      ": shrinkDevicePlaneOf after this communicator's first CUDA call");
    }
    p.shrinkAsked = true;
    p.shrinkParent = can ? std::move(comm) : nullptr;
    p.shrinkExcluded = excluded;
  }
  if (p.store) p.store->set(p.prefix + "/nccl/shrink/" + std::to_string(rank_), can ? "1" : "0");
}

std::string CommunicatorImpl::ncclFormedBy() {
  std::lock_guard<std::mutex> lock(planes_->mutex);
  return planes_->nccl ? planes_->nccl->formedBy() : std::string();
}

void CommunicatorImpl::describeNccl(algo::CollectiveDesc& d) {
  static const char* const kAlgorithm = "nccl";
  static const uint64_t kHash = algorithmNameHash(kAlgorithm);
  d.algorithm = kAlgorithm;
  d.shape = shapeHash(d.call(), kHash);
  d.signature = settings_.watch.checkMismatch ? foldSignature(d.shape) : 0;
  d.seq = nextSeq_++;
  d.timeout = std::chrono::milliseconds(timeoutMs_.load(std::memory_order_relaxed));
  d.watchIndex = watch_->posted(d.seq, Signature(d.call(), kAlgorithm), coarseNow());
}

std::function<void(std::exception_ptr)> CommunicatorImpl::ncclCompletion(
    const std::shared_ptr<RequestState>& state, bool collective) {
  return [this, state, collective](std::exception_ptr error) {
    if (collective) {
      if (error) {
        try {
          std::rethrow_exception(error);
        } catch (const Error& e) {
          watch_->finished(state->desc, &e);
          if (e.code() != ErrorCode::kBroken) markBroken(e.code(), e.what());
        } catch (...) {
        }
      } else {
        watch_->finished(state->desc, nullptr);
      }
    }
    state->complete(std::move(error));
  };
}

Request CommunicatorImpl::postNccl(const algo::CollectiveArgs& args) {
  planes::nccl::NcclPlane& plane = ncclPlane(args);
  auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
  state->desc.call() = args.call();
  std::lock_guard<std::mutex> order(planes_->postMutex);
  engine_->underLock([&] { describeNccl(state->desc); });
  const std::string where = errorHead(rank_, hostName()) + ": " + state->desc.describe();
  try {
    if (aborted_.load()) throw abortedError(where + " not run");
    if (broken_.load(std::memory_order_acquire)) {
      throw Error(ErrorCode::kBroken, where + " not run: the communicator is broken by an "
                                              "earlier error: " + brokenReason());
    }
    watch_->started(state->desc, coarseNow());  // throws the beacons' verdict, if any
  } catch (const Error& e) {
    watch_->finished(state->desc, &e);
    state->complete(std::current_exception());
    return Request(std::move(state));
  }
  const auto deadline = Clock::now() + state->desc.timeout;
  state->deviceWork =
      plane.post(args, state->desc.describe(), deadline, ncclCompletion(state, true));
  return Request(std::move(state));
}

Request CommunicatorImpl::postNcclMessage(const algo::CollectiveArgs& args, int peer) {
  planes::nccl::NcclPlane& plane = ncclPlane(args);
  auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
  state->desc.call() = args.call();
  state->desc.timeout = timeout();
  state->source = args.kind == CollectiveKind::kRecv ? peer : -1;
  const std::string what = std::string(toString(args.kind)) +
                           (args.kind == CollectiveKind::kSend ? " to rank " : " from rank ") +
                           std::to_string(peer) + " (" + std::to_string(args.count) + " x " +
                           toString(args.dtype) + ", NCCL)";
  if (aborted_.load() || broken_.load(std::memory_order_acquire)) {
    const std::string where = errorHead(rank_, hostName()) + ": ";
    state->complete(std::make_exception_ptr(
        aborted_.load() ? abortedError(where + what + " not run")
                        : Error(ErrorCode::kBroken, where + what + " not run: the communicator "
                                                    "is broken by an earlier error: " +
                                                    brokenReason())));
    return Request(std::move(state));
  }
  std::lock_guard<std::mutex> order(planes_->postMutex);
  state->deviceWork = plane.postMessage(args, peer, what, Clock::now() + timeout(),
                                        ncclCompletion(state, false));
  return Request(std::move(state));
}

void CommunicatorImpl::failDevicePlanes(ErrorCode code, const std::string& reason) {
  planes::nccl::NcclPlane* plane = nullptr;
  {
    std::lock_guard<std::mutex> lock(planes_->mutex);
    plane = planes_->nccl.get();
  }
  if (plane != nullptr) plane->fail(code, reason);
}

void CommunicatorImpl::closeDevicePlanes() {
  std::shared_ptr<planes::nccl::NcclPlane> plane;
  {
    std::lock_guard<std::mutex> lock(planes_->mutex);
    plane = std::move(planes_->nccl);
  }
  plane.reset();  // its works settle (aborted) before the watch goes
}

}  // namespace smddp::core

#else  // no NCCL plane in this build

#include "core/communicator_impl.h"

namespace smddp::core {
void CommunicatorImpl::shrinkDevicePlaneOf(CommunicatorImpl&, const std::vector<int>&) {}
std::string CommunicatorImpl::ncclFormedBy() { return ""; }
void CommunicatorImpl::failDevicePlanes(ErrorCode, const std::string&) {}
void CommunicatorImpl::closeDevicePlanes() {}
}  // namespace smddp::core

#endif
