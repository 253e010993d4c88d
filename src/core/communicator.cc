// SPDX-License-Identifier: Apache-2.0
// The public Communicator: argument checks on the caller's thread, then hand-off to the impl.
#include <unistd.h>

#include "algorithms/arena/segment.h"
#include "algorithms/patterns/hosts.h"
#include "common/config.h"
#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/window_impl.h"
#include "core/validate.h"
#include "smddp/error.h"
#include "transport/factory.h"

namespace smddp {
namespace {

// The intra-host shared-memory arena, when every rank is on this host, reached through this
// host's memory (the transport's capabilities().hostMemoryOnly: a network provider was chosen for
// a reason), and every rank wants it: facts every rank shares. A failure to set it up only costs
// speed.
std::unique_ptr<algo::arena::Arena> createArena(Store& store, const std::string& prefix,
                                                const transport::Transport& transport,
                                                const Config& config, const Options& options,
                                                const core::Settings& settings) {
  if (transport.size() < 2 || !transport.capabilities().hostMemoryOnly) return nullptr;
  if (!transport::allOnOneHost(transport.peers())) return nullptr;
  // This rank's wish joins the collective set-up even when it is "no", so that ranks configured
  // differently agree instead of waiting for each other.
  const bool wanted = options.sharedMemory.value_or(config.arena != 0);
  std::string why;
  auto segment = algo::arena::createSegment(
      store, prefix, transport.rank(), transport.size(), static_cast<size_t>(config.arenaSlotBytes),
      static_cast<size_t>(config.arenaEagerBytes), static_cast<size_t>(config.arenaMailBytes),
      settings.timeout, wanted, why);
  if (!segment) {
    if (wanted) {
      SMDDP_WARN(transport.rank(),
                 "no shared-memory arena (" << why << "): collectives use libfabric");
    }
    return nullptr;
  }
  return std::make_unique<algo::arena::Arena>(std::move(segment));
}

// One arena per host for a communicator over several hosts (algorithms/patterns/hosts.h), for the
// hierarchical algorithms: with the same number (>= 2) of ranks on each, or different numbers
// (the leader forms). The ranks of a host agree on it as createArena's do; then the hosts agree (each host's first rank publishes its
// host's outcome), so either every host has one or none keeps it: the algorithm choice must be
// the same on every rank.
core::HostArena createHostArena(Store& store, const std::string& prefix,
                                const transport::Transport& transport, const Config& config,
                                const Options& options, const core::Settings& settings) {
  std::vector<std::string> names;
  for (const auto& peer : transport.peers()) names.push_back(peer.host);
  const algo::patterns::HostLayout layout = algo::patterns::hostLayout(names);
  if (static_cast<int>(names.size()) != transport.size() ||
      !(layout.hierarchical() || layout.unevenHierarchical())) {
    return {};
  }
  const int rank = transport.rank();
  const int host = layout.hostOf[static_cast<size_t>(rank)];
  const int index = layout.localIndex(rank);
  const bool wanted = options.sharedMemory.value_or(config.arena != 0);
  std::string why;
  auto segment = algo::arena::createSegment(
      store, prefix + "/host" + std::to_string(host), index,
      static_cast<int>(layout.local(rank).size()),
      static_cast<size_t>(config.arenaSlotBytes), static_cast<size_t>(config.arenaEagerBytes), 0,
      settings.timeout, wanted, why);
  const std::string key = prefix + "/hostarena/";
  if (index == 0) store.set(key + std::to_string(host), segment ? "1" : "0:" + why);
  std::string refusal;
  for (int h = 0; h < layout.hosts() && refusal.empty(); ++h) {
    const std::string value = store.get(key + std::to_string(h), settings.timeout);
    if (value != "1") refusal = "host of rank " + std::to_string(layout.ranksOf[h][0]) + ": " +
                                (value.size() > 2 ? value.substr(2) : "not wanted");
  }
  if (!refusal.empty()) {
    if (wanted) {
      SMDDP_WARN(rank, "no shared-memory arenas across hosts (" << refusal
                                                                << "): collectives are flat");
    }
    return {};
  }
  return {std::make_unique<algo::arena::Arena>(std::move(segment)), layout};
}

algo::CollectiveArgs barrierArgs() {
  return {Call::of(CollectiveKind::kBarrier, DataType::kUInt8, 0), nullptr, nullptr};
}

}  // namespace

std::shared_ptr<Communicator> Communicator::create(std::shared_ptr<Store> store, int rank, int size,
                                                   const Options& options) {
  if (!store) throw Error(ErrorCode::kInvalidArgument, "smddp: Communicator::create: no store");
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument, "smddp: Communicator::create: rank " +
                                                 std::to_string(rank) + " is not in [0, " +
                                                 std::to_string(size) + ")");
  }
  const Config& config = Config::global();
  const core::Settings settings = core::resolveSettings(options, config);
  // Every rank creates its communicators in the same order, so a per-rank counter gives all ranks
  // the same fresh key prefix even when a name is reused (create/destroy cycles). A generation
  // key replaces the counter where the members' histories differ (a reconfigure's newcomer).
  std::string prefix;
  if (options.generation) {
    if (options.generation->empty() || options.generation->find('/') != std::string::npos) {
      throw Error(ErrorCode::kInvalidArgument,
                  "smddp: Communicator::create: the generation key must be non-empty and "
                  "without '/', got '" + *options.generation + "'");
    }
    prefix = options.name + "/" + *options.generation;
  } else {
    const int64_t incarnation =
        store->add(options.name + "/incarnation/" + std::to_string(rank), 1);
    prefix = options.name + "/" + std::to_string(incarnation);
  }
  transport::TransportRequest request;
  request.store = store.get();
  request.prefix = prefix;
  request.rank = rank;
  request.size = size;
  request.config = &config;
  request.provider = options.provider.value_or("");
  request.timeout = settings.timeout;
  auto transport = transport::createTransport(request);
  auto arena = createArena(*store, prefix, *transport, config, options, settings);
  auto hostArena = createHostArena(*store, prefix, *transport, config, options, settings);
  // send / recv have an endpoint of their own (core/point_to_point.h).
  request.prefix = prefix + "/p2p";
  auto p2p = transport::createTransport(request);
  return std::make_shared<Communicator>(std::make_unique<core::CommunicatorImpl>(
      std::move(transport), settings, store, prefix, std::move(arena), std::move(p2p),
      std::move(hostArena)));
}

Communicator::Communicator(std::unique_ptr<core::CommunicatorImpl> impl) : impl_(std::move(impl)) {}
Communicator::~Communicator() = default;

int Communicator::rank() const { return impl_->rank(); }
int Communicator::size() const { return impl_->size(); }
std::string Communicator::provider() const { return impl_->provider(); }
int64_t Communicator::spinUs() const { return impl_->settings().spinUs; }

std::shared_ptr<void> Communicator::allocateShared(size_t bytes) {
  std::shared_ptr<algo::arena::Pool> pool = impl_->pool();
  void* p = pool->allocate(bytes);
  return std::shared_ptr<void>(p, [pool](void* q) { pool->release(q); });
}

std::map<std::string, uint64_t> Communicator::memoryStats() const { return impl_->memoryStats(); }
StragglerReport Communicator::stragglerReport() const { return impl_->watch().stragglerReport(); }

std::shared_ptr<void> Communicator::allocateDevice(size_t bytes, int device) {
  return impl_->allocateDevice(bytes, device);
}

std::string Communicator::dataPlane() const { return impl_->dataPlane(); }

std::string Communicator::dataPlaneReason() const { return impl_->dataPlaneWhy(); }

void Communicator::shrinkDevicePlaneOf(Communicator& parent,
                                       const std::vector<int>& excludedParentRanks) {
  impl_->shrinkDevicePlaneOf(*parent.impl_, excludedParentRanks);
}

std::string Communicator::ncclFormedBy() const { return impl_->ncclFormedBy(); }

std::map<std::string, uint64_t> Communicator::deviceIpcCalls() const {
  std::map<std::string, uint64_t> calls;
  for (int k = 0; k <= static_cast<int>(CollectiveKind::kControl); ++k) {
    const auto kind = static_cast<CollectiveKind>(k);  // only kinds that ran have a count
    if (impl_->ipcCalls(kind) > 0) calls[toString(kind)] = impl_->ipcCalls(kind);
  }
  return calls;
}

void Communicator::beginEstimate() { impl_->beginEstimate(); }
double Communicator::endEstimate() { return impl_->endEstimate() * 1e6; }

Request Communicator::allReduce(const Buffer& send, const Buffer& recv, ReduceOp op) {
  return impl_->post(core::checkAllReduce({rank(), size()}, send, recv, op));
}

Request Communicator::broadcast(const Buffer& send, const Buffer& recv, int root) {
  return impl_->post(core::checkBroadcast({rank(), size()}, send, recv, root));
}

Request Communicator::allGather(const Buffer& send, const Buffer& recv) {
  return impl_->post(core::checkAllGather({rank(), size()}, send, recv));
}

Request Communicator::allGather(const Buffer& send, const std::vector<Buffer>& recvs) {
  return impl_->post(core::checkAllGatherList({rank(), size()}, send, recvs));
}

Request Communicator::barrier() { return impl_->post(barrierArgs()); }

Request Communicator::reduceScatter(const Buffer& send, const Buffer& recv, ReduceOp op) {
  return impl_->post(core::checkReduceScatter({rank(), size()}, send, recv, op));
}

Request Communicator::reduce(const Buffer& send, const Buffer& recv, ReduceOp op, int root) {
  return impl_->post(core::checkReduce({rank(), size()}, send, recv, op, root));
}

Request Communicator::gather(const Buffer& send, const Buffer& recv, int root) {
  return impl_->post(core::checkGather({rank(), size()}, send, recv, root));
}

Request Communicator::scatter(const Buffer& send, const Buffer& recv, int root) {
  return impl_->post(core::checkScatter({rank(), size()}, send, recv, root));
}

Request Communicator::gather(const Buffer& send, const std::vector<Buffer>& recvs, int root) {
  return impl_->post(core::checkGatherList({rank(), size()}, send, recvs, root));
}

Request Communicator::scatter(const std::vector<Buffer>& sends, const Buffer& recv, int root) {
  return impl_->post(core::checkScatterList({rank(), size()}, sends, recv, root));
}

Request Communicator::allToAll(const Buffer& send, const Buffer& recv) {
  return impl_->post(core::checkAllToAll({rank(), size()}, send, recv));
}

Request Communicator::allToAllV(const std::vector<Buffer>& sends,
                                const std::vector<Buffer>& recvs) {
  return impl_->post(core::checkAllToAllV({rank(), size()}, sends, recvs));
}

Request Communicator::allToAllV(const Buffer& send, const std::vector<size_t>& sendCounts,
                                const std::vector<size_t>& sendOffsets, const Buffer& recv,
                                const std::vector<size_t>& recvCounts,
                                const std::vector<size_t>& recvOffsets) {
  const core::CallSite at{rank(), size()};
  return impl_->post(
      core::checkAllToAllV(at, core::piecesOf(at, "send", send, sendCounts, sendOffsets),
                           core::piecesOf(at, "recv", recv, recvCounts, recvOffsets)));
}

namespace {
void checkUserTag(int rank, const char* what, uint32_t tag) {
  if (tag >= Communicator::kWindowTags && tag - Communicator::kWindowTags <= 0xFFFFu) {
    throw Error(ErrorCode::kInvalidArgument,
                errorHead(rank) + ": " + what + ": tag " + std::to_string(tag) +
                    " is reserved for windows (tags from " +
                    std::to_string(Communicator::kWindowTags) + " to " +
                    std::to_string(Communicator::kWindowTags + 0xFFFFu) + ")");
  }
}
}  // namespace

Request Communicator::send(const Buffer& buf, int peer, uint32_t tag) {
  checkUserTag(rank(), "send", tag);
  return impl_->postPointToPoint(core::checkSend({rank(), size()}, buf, peer), peer, tag);
}

Request Communicator::recv(const Buffer& buf, int peer, uint32_t tag) {
  checkUserTag(rank(), "recv", tag);
  return impl_->postPointToPoint(core::checkRecv({rank(), size()}, buf, peer), peer, tag);
}

std::shared_ptr<Window> Communicator::createWindow(void* data, size_t bytes) {
  return std::make_shared<Window>(
      core::WindowImpl::create(*this, *impl_, impl_->nextWindowId(), data, bytes));
}

void Communicator::allReduceBlocking(const Buffer& send, const Buffer& recv, ReduceOp op) {
  impl_->runBlocking(core::checkAllReduce({rank(), size()}, send, recv, op));
}

void Communicator::broadcastBlocking(const Buffer& send, const Buffer& recv, int root) {
  impl_->runBlocking(core::checkBroadcast({rank(), size()}, send, recv, root));
}

void Communicator::allGatherBlocking(const Buffer& send, const Buffer& recv) {
  impl_->runBlocking(core::checkAllGather({rank(), size()}, send, recv));
}

void Communicator::allGatherBlocking(const Buffer& send, const std::vector<Buffer>& recvs) {
  impl_->runBlocking(core::checkAllGatherList({rank(), size()}, send, recvs));
}

void Communicator::barrierBlocking() { impl_->runBlocking(barrierArgs()); }

void Communicator::reduceScatterBlocking(const Buffer& send, const Buffer& recv, ReduceOp op) {
  impl_->runBlocking(core::checkReduceScatter({rank(), size()}, send, recv, op));
}

void Communicator::reduceBlocking(const Buffer& send, const Buffer& recv, ReduceOp op, int root) {
  impl_->runBlocking(core::checkReduce({rank(), size()}, send, recv, op, root));
}

void Communicator::gatherBlocking(const Buffer& send, const Buffer& recv, int root) {
  impl_->runBlocking(core::checkGather({rank(), size()}, send, recv, root));
}

void Communicator::scatterBlocking(const Buffer& send, const Buffer& recv, int root) {
  impl_->runBlocking(core::checkScatter({rank(), size()}, send, recv, root));
}

void Communicator::gatherBlocking(const Buffer& send, const std::vector<Buffer>& recvs, int root) {
  impl_->runBlocking(core::checkGatherList({rank(), size()}, send, recvs, root));
}

void Communicator::scatterBlocking(const std::vector<Buffer>& sends, const Buffer& recv, int root) {
  impl_->runBlocking(core::checkScatterList({rank(), size()}, sends, recv, root));
}

void Communicator::allToAllBlocking(const Buffer& send, const Buffer& recv) {
  impl_->runBlocking(core::checkAllToAll({rank(), size()}, send, recv));
}

void Communicator::allToAllVBlocking(const std::vector<Buffer>& sends,
                                     const std::vector<Buffer>& recvs) {
  impl_->runBlocking(core::checkAllToAllV({rank(), size()}, sends, recvs));
}

void Communicator::abort() { impl_->abort("abort() called by the application"); }
void Communicator::abort(const std::string& reason) { impl_->abort(reason); }
void Communicator::setTimeout(std::chrono::milliseconds timeout) { impl_->setTimeout(timeout); }
std::chrono::milliseconds Communicator::timeout() const { return impl_->timeout(); }
std::string Communicator::brokenReason() const { return impl_->brokenReason(); }
ErrorCode Communicator::brokenCode() const { return impl_->brokenCode(); }
void Communicator::setFailureHook(FailureHook hook) { impl_->setFailureHook(std::move(hook)); }

}  // namespace smddp
