// SPDX-License-Identifier: Apache-2.0
// CUDA calls on a communicator: staged through pinned host memory (planes/smddp/stager.h). Each
// segment is a request of its own, queued in order; the engine runs it once its input reached
// host memory and always lets its output copies go afterwards, so no device stream waits forever.
#include <string>
#include <thread>

#include "algorithms/arena/segment.h"
#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/recycling_allocator.h"
#include "planes/smddp/path.h"
#include "smddp/error.h"

namespace smddp::core {

using Clock = std::chrono::steady_clock;
using planes::StagedLayout;
using planes::StagedSegment;
using planes::ipcFits;
using planes::ipcFitsAcrossHosts;
using planes::layoutStaged;

DeviceStager& CommunicatorImpl::stager(const algo::CollectiveArgs& args) {
  const std::string at = errorHead(rank_, size_, hostName()) + ": " + toString(args.kind) + ": ";
  std::lock_guard<std::mutex> lock(stagerMutex_);
  if (!stager_) {
    device::Device* device =
        settings_.device != nullptr ? settings_.device : device::processDevice();
    if (device == nullptr) {
      std::string why;
      if (Config::global().device == "none") {
        why = "SMDDP_DEVICE=none";
      } else {
        device::cudaDevice(&why);
      }
      throw Error(ErrorCode::kUnsupported, at + "got CUDA memory (device " +
                                               std::to_string(args.device) +
                                               "), but no device is usable: " + why);
    }
    if (args.device < 0 || args.device >= device->count()) {
      throw Error(ErrorCode::kInvalidArgument,
                  at + "CUDA device " + std::to_string(args.device) + " does not exist (" +
                      std::to_string(device->count()) + " " + device->name() + " device(s))");
    }
    stager_ = std::make_unique<DeviceStager>(*device, args.device, rank_, size_,
                                             settings_.stagingBytes, [this] { return timeout(); });
    SMDDP_INFO(rank_, "CUDA calls on " << device->name() << " device " << args.device
                                       << " are staged through pinned host memory in segments of "
                                       << algo::formatBytes(settings_.stagingBytes));
  } else if (args.device != stager_->ordinal()) {
    throw Error(ErrorCode::kInvalidArgument,
                at + "got CUDA memory of device " + std::to_string(args.device) +
                    ", but this communicator's CUDA calls use device " +
                    std::to_string(stager_->ordinal()) + " (one device per rank)");
  }
  return *stager_;
}

DevicePath CommunicatorImpl::ipcPath(const algo::CollectiveArgs& args) {
  DevicePathFacts facts;
  facts.kind = args.kind;
  facts.op = args.op;
  facts.count = args.count;
  facts.ranks = size_;
  facts.oneHost = topology_.hosts == 1;
  facts.ipc = settings_.deviceIpc;
  const size_t slotBytes = IpcPeers::slotBytesFor(settings_.stagingBytes);
  facts.ipcFits = ipcFits(args, size_, slotBytes);
  facts.evenHosts = topology_.hostArenas;
  facts.ipcFitsAcrossHosts = facts.evenHosts && ipcFitsAcrossHosts(args, ipcHosts_, slotBytes);
  const DevicePath path = chooseDevicePath(facts);
  if (path != DevicePath::kIpc && path != DevicePath::kIpcHosts) return DevicePath::kStaged;
  return connectIpc(args) ? path : DevicePath::kStaged;
}

bool CommunicatorImpl::connectIpc(const algo::CollectiveArgs& args) {
  DeviceStager& s = stager(args);
  {
    std::lock_guard<std::mutex> lock(stagerMutex_);
    if (ipcState_ != IpcState::kUntried) return ipcState_ == IpcState::kOn;
    ipcState_ = IpcState::kOff;  // unless every rank connects below
  }
  // Every rank gets here in the same call: the exchanges are host all_gathers of the communicator.
  struct Offer {
    device::IpcMemHandle handle;
    int32_t ok;
    uint64_t slotBytes;  // every rank's scratch must have the same layout
  };
  Offer mine{};
  std::unique_ptr<IpcPeers> peers;
  std::string why;
  try {
    peers = std::make_unique<IpcPeers>(s.device(), s.ordinal(), settings_.stagingBytes);
    mine.handle = peers->handle();
    mine.ok = 1;
    mine.slotBytes = settings_.stagingBytes;
  } catch (const std::exception& e) {
    why = e.what();
  }
  auto allGather = [this](const void* send, void* recv, size_t bytes) {
    algo::CollectiveArgs a(Call::of(CollectiveKind::kAllGather, DataType::kUInt8, bytes), send,
                           recv);
    post(std::move(a)).wait();
  };
  std::vector<Offer> offers(static_cast<size_t>(size_));
  allGather(&mine, offers.data(), sizeof(Offer));
  int32_t opened = 1;
  for (const Offer& o : offers) {
    opened = opened && o.ok;
    if (o.ok && o.slotBytes != settings_.stagingBytes && why.empty()) {
      opened = 0;
      why = "the ranks' SMDDP_STAGING_BYTES differ";
    }
  }
  if (opened && peers) {  // the peers of this host: every rank, or the host's by local index
    std::vector<device::IpcMemHandle> handles;
    int self = rank_;
    if (topology_.hosts == 1) {
      for (const Offer& o : offers) handles.push_back(o.handle);
    } else {
      for (int r : hostGroups_.local) handles.push_back(offers[static_cast<size_t>(r)].handle);
      self = ipcHosts_.local;
    }
    opened = peers->open(handles, self, &why) ? 1 : 0;
  } else if (why.empty()) {
    why = "a peer could not export its device memory";
  }
  std::vector<int32_t> results(static_cast<size_t>(size_));
  allGather(&opened, results.data(), sizeof(int32_t));
  bool all = true;
  for (int32_t r : results) all = all && r != 0;
  if (!all && why.empty()) why = "a peer could not map this rank's device memory";
  std::lock_guard<std::mutex> lock(stagerMutex_);
  if (all) {
    ipc_ = std::move(peers);
    ipcState_ = IpcState::kOn;
    SMDDP_INFO(rank_, "collectives on " << s.device().name()
                                        << " device memory within this host: CUDA IPC"
                                        << (topology_.hosts > 1
                                                ? " (across hosts: each rank's share staged)"
                                                : ""));
  } else {
    SMDDP_WARN(rank_, "no CUDA IPC between this host's ranks (" << why
                                                                << "): CUDA calls are staged "
                                                                   "through host memory");
  }
  return all;
}

std::map<std::string, uint64_t> CommunicatorImpl::memoryStats() {
  const algo::arena::Pool::Stats pool = pool_->stats();
  std::map<std::string, uint64_t> stats = {{"shared_allocated", pool.allocatedBytes},
                                           {"shared_cached", pool.cachedBytes},
                                           {"shared_blocks", pool.blocks},
                                           {"shared_peer_mapped", pool.peerMappedBytes},
                                           {"shared_in_place_calls", pool.inPlaceCalls},
                                           {"device_ipc_scratch", 0},
                                           {"staging_pinned", 0},
                                           {"arena", 0},
                                           {"windows", windowBytes_->load()},
                                           {"foreign_messages_dropped",
                                            transport_->foreignMessagesDropped()}};
  if (p2p_) stats["foreign_messages_dropped"] += p2p_->foreignMessagesDropped();
  const common::WaitPolicy::Stats waits = waiting_->stats();
  stats["wait_yields"] = waits.yields;
  stats["wait_slow_yields"] = waits.slowYields;
  stats["wait_sleeps"] = waits.sleeps;
  stats["wait_long_spins"] = waits.longSpins;
  stats["wait_yield_ns"] = waits.yieldNs;
  stats["wait_contended"] = waits.contended ? 1 : 0;
  if (arena_) stats["arena"] = arena_->segment().mappedBytes();
  if (hostArena_) stats["arena"] = hostArena_->segment().mappedBytes();
  std::lock_guard<std::mutex> lock(stagerMutex_);
  if (ipc_) stats["device_ipc_scratch"] = 2 * ipc_->slotBytes() + 2 * ipc_->oneShotBytes();
  if (stager_) stats["staging_pinned"] = stager_->pinnedBytes();
  return stats;
}

Request CommunicatorImpl::submitSegments(const std::shared_ptr<StagedCall>& call) {
  std::shared_ptr<RequestState> last;
  size_t k = 0;
  try {
    for (; k < call->segments(); ++k) {
      auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
      state->engine = engine_.get();
      state->args = call->hostArgs(k);
      state->desc.call() = state->args.call();
      state->staged = call;
      state->segment = k;
      engine_->submit(state);
      last = std::move(state);
    }
  } catch (...) {
    for (; k < call->segments(); ++k) call->release(k);  // never queued: let the device go on
    throw;
  }
  return Request(std::move(last));
}

Request CommunicatorImpl::postStagedMessage(const algo::CollectiveArgs& args, int peer,
                                            uint32_t tag) {
  DevicePathFacts facts;
  facts.kind = args.kind;
  facts.count = args.count;
  facts.ranks = size_;
  facts.fabricTakesDevice = p2p_->takesDeviceMemory();
  const auto& peers = transport_->peers();
  facts.peerElsewhere =
      peer >= 0 && static_cast<size_t>(peer) < peers.size() &&
      static_cast<size_t>(rank_) < peers.size() &&
      peers[static_cast<size_t>(peer)].host != peers[static_cast<size_t>(rank_)].host;
  const bool fabric = chooseDevicePath(facts) == DevicePath::kFabric;
  DeviceStager& s = stager(args);
  std::shared_ptr<StagedCall> call = fabric ? s.stageForFabric(args, toString(args.kind))
                                            : s.stageMessage(args, toString(args.kind));
  // A staged send leaves from its pinned copy; a fabric message is read or written by the
  // provider in the caller's buffer. Either starts once ready(0) completed: the copy, or the work
  // queued before it on the caller's stream.
  if ((fabric || args.kind == CollectiveKind::kSend) &&
      !device::waitEvent(call->device(), call->ready(0), Clock::now() + timeout())) {
    call->release(0);
    throw Error(ErrorCode::kTimeout,
                errorHead(rank_, hostName()) + ": " + toString(args.kind) + " with rank " +
                    std::to_string(peer) +
                    ": the work queued before it on the caller's stream did not finish within " +
                    std::to_string(timeout().count()) + " ms");
  }
  if (args.kind == CollectiveKind::kSend) call->release(0);  // nothing comes back to the device
  Request request = [&] {
    try {
      return p2p_->post(call->hostArgs(0), peer, tag, timeout(), call, fabric ? args.device : -1);
    } catch (...) {
      call->release(0);  // not posted: the device must not wait for it
      throw;
    }
  }();
  // Whatever happens to the message, the device goes on (garbage if it failed: the error is the
  // request's).
  request.onComplete([call] { call->release(0); });
  return request;
}

Request CommunicatorImpl::postStaged(const algo::CollectiveArgs& args) {
  const DevicePath path = ipcPath(args);
  if (path != DevicePath::kStaged) {
    ipcCalls_[static_cast<size_t>(args.kind)].fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> order(stagedPostMutex_);
    return submitSegments(stager(args).stageIpc(
        args, *ipc_, path == DevicePath::kIpcHosts ? &ipcHosts_ : nullptr, toString(args.kind)));
  }
  DeviceStager& s = stager(args);
  // A refused algorithm override fails here, before the device is given work.
  const StagedLayout layout = layoutStaged(args, rank_, size_, settings_.stagingBytes, nullptr);
  for (const StagedSegment& seg : layout.segments) {
    if (size_ > 1 && (seg.host.count > 0 || seg.host.kind == CollectiveKind::kAllToAllV)) {
      algo::selectAlgorithm(seg.host.kind, seg.host.bytes(), topology_, settings_.overrides);
    }
  }
  std::lock_guard<std::mutex> order(stagedPostMutex_);
  return submitSegments(s.stage(args, layout, toString(args.kind)));
}

std::exception_ptr CommunicatorImpl::run(RequestState& r) {
  if (!r.staged) return execute(r.args, r.desc, r.algorithm);
  StagedCall& call = *r.staged;
  struct Release {  // whatever happens below, the segment's device copies go on
    StagedCall& call;
    size_t segment;
    ~Release() { call.release(segment); }
  } release{call, r.segment};
  std::exception_ptr error;
  const auto deadline = Clock::now() + r.desc.timeout;
  auto pause = std::chrono::microseconds(1);
  // A broken communicator fails the segment at once in execute(): no reason to wait for it.
  auto inputReady = [&] {
    try {
      return call.device().done(call.ready(r.segment));
    } catch (const std::exception& e) {  // the device failed: so does the collective
      error = std::make_exception_ptr(Error(
          ErrorCode::kInternal, errorHead(rank_) + ": " + r.desc.describe() + ": " + e.what()));
      markBroken(ErrorCode::kInternal, e.what());
      return true;
    }
  };
  while (!broken_.load(std::memory_order_acquire) && !inputReady()) {
    const bool late = Clock::now() > deadline;
    if (late || aborted_.load()) {
      const std::string where = errorHead(rank_, hostName()) + ": " + r.desc.describe();
      const Error e = late ? Error(ErrorCode::kTimeout,
                                   where + ": its input did not reach host memory within " +
                                       std::to_string(r.desc.timeout.count()) +
                                       " ms (the work queued before it on the caller's stream "
                                       "has not finished)")
                           : abortedError(where + ": not run");
      markBroken(e.code(), e.what());
      SMDDP_WARN(rank_, e.what());
      error = std::make_exception_ptr(e);
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(100));
  }
  if (!error) error = execute(r.args, r.desc, r.algorithm);
  return error;
}

}  // namespace smddp::core
