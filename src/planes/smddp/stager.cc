// SPDX-License-Identifier: Apache-2.0
// Staging of CUDA calls through pinned host memory (stager.h).
#include "planes/smddp/stager.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#include "common/logging.h"
#include "planes/smddp/watchdog.h"
#include "smddp/error.h"

namespace smddp::planes {

// Pinned blocks by power-of-two size class: allocating pinned memory costs milliseconds, so
// blocks are kept for the next call of the same class. They are freed only with the pool (after
// the stager drained): freeing pinned memory waits for the whole device on CUDA, and a staging
// stream may be waiting on a flag that only this process raises later.
class PinnedPool : public std::enable_shared_from_this<PinnedPool> {
 public:
  explicit PinnedPool(device::Device& device) : device_(device) {}
  ~PinnedPool() {
    for (auto& [bytes, blocks] : free_) {
      for (char* b : blocks) device_.freePinned(b);
    }
  }
  std::shared_ptr<char> acquire(size_t bytes) {
    size_t size = 4096;
    while (size < bytes) size *= 2;
    char* block = nullptr;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto& list = free_[size];
      if (!list.empty()) {
        block = list.back();
        list.pop_back();
      }
    }
    if (block == nullptr) {
      block = static_cast<char*>(device_.allocPinned(size));
      held_.fetch_add(size, std::memory_order_relaxed);
    }
    std::weak_ptr<PinnedPool> pool = weak_from_this();
    device::Device* device = &device_;
    return std::shared_ptr<char>(block, [pool, device, size](char* b) {
      if (auto p = pool.lock()) {
        p->give(b, size);
      } else {
        device->freePinned(b);
      }
    });
  }

 private:
  void give(char* block, size_t size) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_[size].push_back(block);
  }
  device::Device& device_;
  std::mutex mutex_;
  std::map<size_t, std::vector<char*>> free_;

 public:
  // Pinned bytes this pool allocated (in calls or kept for the next).
  uint64_t held() const { return held_.load(std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> held_{0};
};

StagedCall::StagedCall(device::Device& device, int ordinal, size_t segments) : device_(device) {
  start_ = device.createEvent(ordinal);
  end_ = device.createEvent(ordinal);
  ready_.reserve(segments);
  for (size_t k = 0; k < segments; ++k) ready_.push_back(device.createEvent(ordinal));
}

StagedCall::~StagedCall() {
  releaseAll();
  for (device::Event e : ready_) device_.destroyEvent(e);
  device_.destroyEvent(start_);
  device_.destroyEvent(end_);
}

void StagedCall::release(size_t k) {
  if (flags_ != nullptr && k < ready_.size()) __atomic_store_n(&flags_[k], 1u, __ATOMIC_RELEASE);
}

size_t StagedCall::raised() const {
  size_t n = 0;
  for (size_t k = 0; flags_ != nullptr && k < ready_.size(); ++k) {
    n += __atomic_load_n(&flags_[k], __ATOMIC_ACQUIRE) != 0 ? 1 : 0;
  }
  return n;
}

void StagedCall::releaseAll() {
  for (size_t k = 0; k < ready_.size(); ++k) release(k);
}

DeviceStager::DeviceStager(device::Device& device, int ordinal, int rank, int size,
                           size_t segmentBytes, std::function<std::chrono::milliseconds()> late,
                           std::function<void(const std::string&)> report)
    : device_(device),
      ordinal_(ordinal),
      rank_(rank),
      size_(size),
      segmentBytes_(segmentBytes),
      pool_(std::make_shared<PinnedPool>(device)) {
  // The stager's streams wait on host flags that are raised only after it returns: a kernel
  // loaded lazily behind such a wait would never launch (device.h, loadKernels).
  device.loadKernels(ordinal);
  stream_ = device.createStream(ordinal);
  const int r = rank;
  if (!report) report = [r](const std::string& text) { SMDDP_WARN(r, text); };
  watchdog_ = std::make_unique<DeviceWatchdog>(
      device, std::move(late), errorHead(rank, size, hostName()), std::move(report));
}

DeviceStager::~DeviceStager() {
  watchdog_.reset();
  drain();
}

bool DeviceStager::drain() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (drained_ >= 0) return drained_ == 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  bool drained = true;
  for (auto& call : inflight_) {
    call->releaseAll();
    drained = drained && device::waitEvent(device_, call->end(), deadline);
  }
  if (!drained) {
    SMDDP_WARN(rank_, "the staging stream of " << device_.name() << " device " << ordinal_
                                               << " did not drain within 30 s at shutdown; its "
                                                  "pinned buffers are left allocated");
    for (auto& call : inflight_) new std::shared_ptr<StagedCall>(call);  // never freed
    drained_ = 0;
    return false;
  }
  inflight_.clear();
  device_.destroyStream(stream_);
  for (auto& [stream, last] : messageStreams_) device_.destroyStream(stream);
  drained_ = 1;
  return true;
}

void DeviceStager::checkPointers(const algo::CollectiveArgs& args, const StagedLayout& layout,
                                 const char* what) const {
  for (const StagedSegment& s : layout.segments) {
    for (const auto* pieces : {&s.in, &s.out}) {
      for (const StagedPiece& p : *pieces) {
        const device::PointerInfo info = device_.query(p.device);
        if (info.kind == device::MemoryKind::kDevice && info.ordinal == ordinal_) continue;
        char address[32];
        std::snprintf(address, sizeof(address), "%p", p.device);
        throw Error(ErrorCode::kInvalidArgument,
                    errorHead(rank_, size_, hostName()) + ": " + what + ": the " +
                        (pieces == &s.in ? "input" : "output") + " at " + address +
                        " is said to be CUDA memory of device " + std::to_string(args.device) +
                        " but the " + device_.name() + " device layer finds " +
                        device::toString(info.kind) + " memory" +
                        (info.ordinal >= 0 ? " of device " + std::to_string(info.ordinal) : ""));
      }
    }
  }
}

void DeviceStager::reap() {
  for (auto it = inflight_.begin(); it != inflight_.end();) {
    it = device_.done((*it)->end()) ? inflight_.erase(it) : std::next(it);
  }
}

std::shared_ptr<StagedCall> DeviceStager::stage(const algo::CollectiveArgs& args,
                                                const StagedLayout& shape, const char* what) {
  checkPointers(args, shape, what);
  std::lock_guard<std::mutex> lock(mutex_);
  reap();
  return enqueue(args, shape, stream_, what);
}

std::shared_ptr<StagedCall> DeviceStager::stageMessage(const algo::CollectiveArgs& args,
                                                       const char* what) {
  const StagedLayout shape = layoutStaged(args, rank_, size_, segmentBytes_, nullptr);
  checkPointers(args, shape, what);
  std::lock_guard<std::mutex> lock(mutex_);
  reap();
  auto& slot = freeMessageStream();
  slot.second = enqueue(args, shape, slot.first, what);
  return slot.second;
}

std::pair<device::Stream, std::shared_ptr<StagedCall>>& DeviceStager::freeMessageStream() {
  for (auto& slot : messageStreams_) {
    if (!slot.second || device_.done(slot.second->end())) return slot;
  }
  messageStreams_.emplace_back(device_.createStream(ordinal_), nullptr);
  return messageStreams_.back();
}

std::shared_ptr<StagedCall> DeviceStager::stageForFabric(const algo::CollectiveArgs& args,
                                                         const char* what) {
  StagedLayout gates = layoutStaged(args, rank_, size_, segmentBytes_, nullptr);
  checkPointers(args, gates, what);
  for (StagedSegment& s : gates.segments) {
    s.in.clear();
    s.out.clear();
  }
  gates.blockBytes = 0;
  std::lock_guard<std::mutex> lock(mutex_);
  reap();
  auto& slot = freeMessageStream();
  slot.second = enqueue(args, gates, slot.first, what, true);
  return slot.second;
}

std::shared_ptr<StagedCall> DeviceStager::newCall(size_t segments, size_t dataBytes,
                                                  device::Stream stream, const char* what) {
  const size_t flagBytes = (segments * sizeof(uint32_t) + 63) / 64 * 64;
  auto call = std::make_shared<StagedCall>(device_, ordinal_, segments);
  call->block_ = pool_->acquire(flagBytes + dataBytes);
  call->flags_ = reinterpret_cast<uint32_t*>(call->block_.get());
  std::memset(call->flags_, 0, flagBytes);
  call->data_ = call->block_.get() + flagBytes;
  call->stream_ = stream;
  call->what_ = what;
  inflight_.push_back(call);
  watchdog_->watch(call);
  return call;
}

template <typename Fn>
void DeviceStager::launch(const std::shared_ptr<StagedCall>& call, Fn enqueueWork) {
  try {
    enqueueWork();
  } catch (...) {
    abandon(call);
    call->enqueued_.store(true, std::memory_order_release);
    throw;
  }
  call->enqueued_.store(true, std::memory_order_release);
}

std::shared_ptr<StagedCall> DeviceStager::enqueue(const algo::CollectiveArgs& args,
                                                  const StagedLayout& shape, device::Stream stream,
                                                  const char* what, bool onFabric) {
  auto call = newCall(shape.segments.size(), onFabric ? 0 : shape.blockBytes, stream, what);
  if (onFabric) {  // the gates only, and the host call is the call itself (device buffers)
    call->layout_ = shape;
    call->layout_.segments[0].host = args;
  } else {
    call->layout_ = layoutStaged(args, rank_, size_, segmentBytes_, call->data_);
  }
  launch(call, [&] { enqueueCopies(*call, args); });
  return call;
}

void DeviceStager::enqueueCopies(StagedCall& call, const algo::CollectiveArgs& args) {
  device::Stream stream = call.stream_;
  device_.record(call.start_, args.stream);
  device_.streamWait(stream, call.start_);
  for (size_t k = 0; k < call.segments(); ++k) {
    for (const StagedPiece& p : call.layout_.segments[k].in) {
      device_.copyAsync(call.data_ + p.offset, p.device, p.bytes, stream);
    }
    device_.record(call.ready_[k], stream);
  }
  for (size_t k = 0; k < call.segments(); ++k) {
    device_.waitValue(stream, &call.flags_[k], 1);
    for (const StagedPiece& p : call.layout_.segments[k].out) {
      device_.copyAsync(const_cast<void*>(p.device), call.data_ + p.offset, p.bytes, stream);
    }
  }
  device_.record(call.end_, stream);
}

void DeviceStager::abandon(const std::shared_ptr<StagedCall>& call) {
  // What was enqueued must drain before the block is reused: raise every flag and end the call
  // on the stream. Without an end event it never counts as done: it is leaked, not reused.
  call->releaseAll();
  try {
    device_.record(call->end_, call->stream_);
  } catch (...) {
    inflight_.pop_back();
    new std::shared_ptr<StagedCall>(call);  // never freed: the device may still use it
  }
}

uint64_t DeviceStager::pinnedBytes() const { return pool_->held(); }

std::shared_ptr<StagedCall> DeviceStager::stageIpc(const algo::CollectiveArgs& args,
                                                   IpcPeers& peers, const IpcHosts* hosts,
                                                   const char* what) {
  checkPointers(args, layoutStaged(args, rank_, size_, segmentBytes_, nullptr), what);
  algo::CollectiveArgs barrier(Call::of(CollectiveKind::kBarrier, DataType::kUInt8, 0), nullptr,
                               nullptr);
  barrier.scope = hosts != nullptr ? algo::Scope::kHost : algo::Scope::kAll;
  const ReduceOp op = args.op == ReduceOp::kAvg ? ReduceOp::kSum : args.op;
  std::lock_guard<std::mutex> lock(mutex_);
  reap();
  const IpcScratch scratch = peers.scratch();
  std::shared_ptr<char> pinned;  // across hosts: what the exchanges move, for the call's life
  std::vector<IpcOp> ops;
  if (hosts != nullptr) {
    pinned = pool_->acquire(ipcPinnedBytes(args, *hosts, scratch));
    ops = planIpcAcrossHosts(args, *hosts, scratch, peers.clock(), pinned.get());
  } else {
    ops = planIpc(args, rank_, size_, scratch, peers.clock());
  }
  auto call = newCall(ipcSteps(ops), 0, stream_, what);
  call->pinned_ = std::move(pinned);
  call->layout_.segments.reserve(ipcSteps(ops));
  for (const IpcOp& o : ops) {
    if (o.kind == IpcOp::kBarrier) {
      call->layout_.segments.push_back(StagedSegment{barrier, {}, {}});
    } else if (o.kind == IpcOp::kExchange) {
      algo::CollectiveArgs step(Call::of(o.step, args.dtype, o.count, op), o.a, o.dst);
      step.scope = algo::Scope::kCross;
      call->layout_.segments.push_back(StagedSegment{step, {}, {}});
    }
  }
  launch(call, [&] { enqueuePlan(*call, args, ops); });
  return call;
}

}  // namespace smddp::planes
