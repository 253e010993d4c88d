// SPDX-License-Identifier: Apache-2.0
// Which device plane a CUDA call takes (device_planes.h, planes/choice.h): the facts each rank
// publishes at creation (its current device then: set the device before creating the group, as
// with NCCL), the decision at the first CUDA call or query (reading what every rank published,
// so the post never waits for a peer that has not called yet), and the dispatch to smddp's own
// plane (communicator_staged.cc) or the NCCL plane (communicator_nccl.cc).
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/device_planes.h"
#include "transport/peer_liveness.h"
#ifdef SMDDP_HAVE_NCCL_PLANE
#include "planes/nccl/nccl_plane.h"
#endif

namespace smddp::core {

DevicePlanes::DevicePlanes() = default;
DevicePlanes::~DevicePlanes() = default;

bool processStopped(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(in, text)) return false;
  const size_t paren = text.rfind(')');  // the name may hold spaces and parentheses
  if (paren == std::string::npos || paren + 2 >= text.size()) return false;
  const char state = text[paren + 2];
  return state == 'T' || state == 't';
}

namespace {

// How long a peer's exit waits for its announced cause (a beacon round) before it is named.
constexpr std::chrono::milliseconds kCauseGrace{200};

std::string factsKey(const std::string& prefix, int rank) {
  return prefix + "/plane/" + std::to_string(rank);
}

}  // namespace

void CommunicatorImpl::publishPlaneFacts() {
  DevicePlanes& p = *planes_;
  if (!p.store) {
    p.unpublished = "no store to share the ranks' devices through";
    return;
  }
  PlaneFacts f;
  const auto& peers = transport_->peers();
  f.host = static_cast<size_t>(rank_) < peers.size() ? peers[static_cast<size_t>(rank_)].host
                                                     : hostName();
  f.forced = Config::global().gpuPlane;
  device::Device* device = settings_.device != nullptr ? settings_.device : device::processDevice();
  if (device == nullptr) {
    f.uuid = "none-" + std::to_string(rank_);
    f.ncclWhy = "no device is usable (SMDDP_DEVICE)";
  } else {
    try {
      p.publishedOrdinal = device->current();
      f.uuid = device->uuid(p.publishedOrdinal);
    } catch (const std::exception& e) {
      f.uuid = "unknown-" + std::to_string(rank_);
      f.ncclWhy = std::string("its device has no UUID: ") + e.what();
    }
  }
#ifdef SMDDP_HAVE_NCCL_PLANE
  if (f.ncclWhy.empty()) {
    std::string why;
    const planes::nccl::NcclApi* api = planes::nccl::loadNccl(device->name(), &why);
    f.ncclVersion = api != nullptr ? planes::nccl::versionOf(*api) : 0;
    f.ncclWhy = why;
  }
#else
  if (f.ncclWhy.empty()) f.ncclWhy = "this build of smddp has no NCCL plane (no nccl.h at build time)";
#endif
  try {
    p.store->set(factsKey(p.prefix, rank_), f.encode());
    p.published = true;
  } catch (const std::exception& e) {
    p.unpublished = std::string("the store failed: ") + e.what();
  }
}

planes::Plane CommunicatorImpl::decidePlane() {
  DevicePlanes& p = *planes_;
  const int known = p.decided.load(std::memory_order_acquire);
  if (known >= 0) return static_cast<planes::Plane>(known);
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.decided.load() >= 0) return static_cast<planes::Plane>(p.decided.load());
  const std::string at = errorHead(rank_, size_, hostName()) + ": choosing the device plane: ";
  if (!p.published) {
    p.choice.plane = planes::Plane::kSmddp;
    p.choice.why = p.unpublished;
  } else {
    std::vector<PlaneFacts> ranks;
    const auto deadline = std::chrono::steady_clock::now() + timeout();
    for (int r = 0; r < size_; ++r) {
      std::string text;
      try {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        text = p.store->get(factsKey(p.prefix, r), std::max(left, std::chrono::milliseconds(1)));
      } catch (const std::exception& e) {
        throw Error(ErrorCode::kStore, at + "rank " + std::to_string(r) +
                                           " did not say what device it holds: " + e.what());
      }
      try {
        ranks.push_back(PlaneFacts::decode(text));
      } catch (const std::invalid_argument& e) {
        throw Error(ErrorCode::kStore, at + "rank " + std::to_string(r) +
                                           "'s entry is not smddp's: " + e.what());
      }
    }
    p.choice = planes::choosePlane(ranks);
    if (!p.choice.error.empty()) throw Error(ErrorCode::kInvalidArgument, at + p.choice.error);
  }
  SMDDP_INFO(rank_, "CUDA tensors use the " << planes::toString(p.choice.plane) << " plane: "
                                            << p.choice.why);
  if (p.choice.plane != planes::Plane::kNccl) p.shrinkParent.reset();  // nothing to shrink
  p.decided.store(static_cast<int>(p.choice.plane), std::memory_order_release);
  return p.choice.plane;
}

std::string CommunicatorImpl::dataPlane() { return planes::toString(decidePlane()); }

std::string CommunicatorImpl::dataPlaneWhy() {
  decidePlane();
  std::lock_guard<std::mutex> lock(planes_->mutex);
  return planes_->choice.why;
}

void CommunicatorImpl::checkPublishedDevice(const algo::CollectiveArgs& args) {
  DevicePlanes& p = *planes_;
  if (p.publishedOrdinal < 0 || args.device == p.publishedOrdinal ||
      p.warnedDevice.exchange(true, std::memory_order_acq_rel)) {
    return;
  }
  SMDDP_WARN(rank_, errorHead(rank_) << ": CUDA memory of device " << args.device << ", but device "
                                     << p.publishedOrdinal
                                     << " was current when the group was created; its data plane ("
                                     << planes::toString(decidePlane())
                                     << ") was chosen from the devices current then. Set the "
                                        "device before creating the group (torch.cuda.set_device, "
                                        "or init_process_group(device_id=...)).");
}

Request CommunicatorImpl::postDevice(const algo::CollectiveArgs& args) {
  checkPublishedDevice(args);
#ifdef SMDDP_HAVE_NCCL_PLANE
  if (decidePlane() == planes::Plane::kNccl && planes::nccl::refusal(args.call()).empty()) {
    return postNccl(args);
  }
#else
  decidePlane();
#endif
  return postStaged(args);
}

Request CommunicatorImpl::postDeviceMessage(const algo::CollectiveArgs& args, int peer,
                                            uint32_t tag) {
#ifdef SMDDP_HAVE_NCCL_PLANE
  checkPublishedDevice(args);
  if (decidePlane() == planes::Plane::kNccl && tag == 0) {
    if (peer == transport::kAnyPeer) {
      throw Error(ErrorCode::kUnsupported,
                  errorHead(rank_, hostName()) +
                      ": recv from any source of CUDA memory with tag 0: this group's CUDA "
                      "tensors take the NCCL plane, whose messages name their peer (name the "
                      "source, or use another tag)");
    }
    return postNcclMessage(args, peer);
  }
#endif
  return postStagedMessage(args, peer, tag);
}

std::shared_ptr<void> CommunicatorImpl::allocateDevice(size_t bytes, int ordinal) {
  device::Device* device = settings_.device != nullptr ? settings_.device : device::processDevice();
  const std::string at = errorHead(rank_, hostName()) + ": allocating " + std::to_string(bytes) +
                         " bytes of device memory: ";
  if (device == nullptr) throw Error(ErrorCode::kUnsupported, at + "no device is usable");
  if (ordinal < 0 || ordinal >= device->count()) {
    throw Error(ErrorCode::kInvalidArgument, at + "device " + std::to_string(ordinal) +
                                                 " does not exist (" +
                                                 std::to_string(device->count()) + " " +
                                                 device->name() + " device(s))");
  }
#ifdef SMDDP_HAVE_NCCL_PLANE
  if (decidePlane() == planes::Plane::kNccl) {
    std::string why;
    if (const auto* api = planes::nccl::loadNccl(device->name(), &why)) {
      if (auto memory = planes::nccl::memAlloc(*api, *device, ordinal, bytes)) return memory;
    }
  }
#endif
  void* p = device->allocDevice(std::max<size_t>(bytes, 1), ordinal);
  return std::shared_ptr<void>(p, [device](void* q) {
    try {
      device->freeDevice(q);
    } catch (...) {  // a deleter: the memory stays allocated
    }
  });
}

bool CommunicatorImpl::costsOnNccl(const algo::CollectiveArgs& args) {
#ifdef SMDDP_HAVE_NCCL_PLANE
  const bool message = args.kind == CollectiveKind::kSend || args.kind == CollectiveKind::kRecv;
  if (!message && !planes::nccl::refusal(args.call()).empty()) return false;
  const int known = planes_->decided.load(std::memory_order_acquire);
  if (known >= 0) return static_cast<planes::Plane>(known) == planes::Plane::kNccl;
  // Undecided (an estimate communicates nothing): what this rank alone would take.
  if (Config::global().gpuPlane == "smddp") return false;
  device::Device* device = settings_.device != nullptr ? settings_.device : device::processDevice();
  std::string why;
  return device != nullptr && planes::nccl::loadNccl(device->name(), &why) != nullptr;
#else
  (void)args;
  return false;
#endif
}

std::string CommunicatorImpl::deviceVerdict(ErrorCode* code) {
  DevicePlanes& p = *planes_;
  std::lock_guard<std::mutex> lock(p.verdictMutex);
  if (!p.verdict.empty()) {
    *code = static_cast<ErrorCode>(p.verdictCode);
    return p.verdict;
  }
  std::string found;
  const algo::ExecMonitor* m = watch_->monitor();
  // The beacons' verdict (a peer's announced failure, a mismatch), as "<the verdict>".
  auto monitorVerdict = [&] {
    algo::CollectiveDesc desc;
    try {
      m->raise(desc);
    } catch (const Error& e) {  // "smddp: rank R (host): <desc>: <the verdict>"
      *code = e.code();
      const std::string text = e.what();
      const std::string mark = ": " + desc.describe() + ": ";
      const size_t at = text.find(mark);
      found = at == std::string::npos ? text : text.substr(at + mark.size());
    }
  };
  if (aborted_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> state(stateMutex_);
    *code = ErrorCode::kAborted;
    found = "communicator aborted: " + abortReason_;
  } else if (broken_.load(std::memory_order_acquire)) {
    *code = ErrorCode::kBroken;
    found = "the communicator is broken by an earlier error: " + brokenReason();
  } else if (m != nullptr && m->failed()) {
    monitorVerdict();
  } else {
    const auto& peers = transport_->peers();
    auto who = [&](int r) {
      const auto& info = peers[static_cast<size_t>(r)];
      return "rank " + std::to_string(r) + " (" + info.host + ", pid " + std::to_string(info.pid) +
             ")";
    };
    const int dead = p.liveness ? p.liveness->check() : -1;
    if (dead >= 0 && m != nullptr && m->awaitVerdict(kCauseGrace, true)) {
      // A peer that exited after it failed (a mismatch it found, say) announced why: the cause
      // is named rather than the exit (one beacon round, bounded, reads the announcements).
      monitorVerdict();
    } else if (dead >= 0) {
      *code = ErrorCode::kPeerFailure;
      found = who(dead) + " exited";
    } else if (std::chrono::steady_clock::now() >= p.nextStopCheck) {
      p.nextStopCheck = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
      for (const auto& [r, pid] : p.localPeers) {
        if (processStopped(pid)) {
          *code = ErrorCode::kPeerFailure;
          found = who(r) + " is stopped (SIGSTOP or a debugger)";
          break;
        }
      }
    }
  }
  if (!found.empty()) {
    p.verdict = found;
    p.verdictCode = static_cast<int>(*code);
  }
  return found;
}

void CommunicatorImpl::startPeerChecks() {
  DevicePlanes& p = *planes_;
  std::lock_guard<std::mutex> lock(p.verdictMutex);
  if (p.liveness) return;
  const auto& peers = transport_->peers();
  p.liveness = std::make_unique<transport::PeerLiveness>(peers, rank_);
  const std::string& me =
      static_cast<size_t>(rank_) < peers.size() ? peers[static_cast<size_t>(rank_)].host : "";
  const std::string ns = transport::processNamespace();  // pids of other namespaces: no
  for (size_t r = 0; r < peers.size(); ++r) {
    if (static_cast<int>(r) != rank_ && transport::pidWatchable(peers[r], me, ns)) {
      p.localPeers.emplace_back(static_cast<int>(r), peers[r].pid);
    }
  }
}

}  // namespace smddp::core
