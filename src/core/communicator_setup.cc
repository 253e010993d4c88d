// SPDX-License-Identifier: Apache-2.0
// A communicator's construction, in named steps: what the topology is (hosts, ranks per host,
// usable CPUs), how its waiters wait, the start line, and the executor's wiring (the arenas'
// contexts, the host groups, point-to-point); then its engine thread starts.
#include <algorithm>
#include <map>
#include <set>
#include <thread>

#include "common/cpus.h"
#include "common/logging.h"
#include "core/communicator_impl.h"
#include "reduce/reducer.h"
#include "smddp/error.h"
#include "smddp/version.h"

namespace smddp::core {

// The pipelining segment of the hierarchical algorithms' cross-host step (SMDDP_SEGMENT_BYTES,
// when smaller, wins): more messages in flight than with 1 MiB, each still large. Measured:
// docs/ALGORITHMS.md, "Measured constants".
constexpr size_t kCrossSegmentBytes = 256 * 1024;

bool oversubscribedHost(int ranksOnHost, unsigned cores) {
  return cores > 0 && ranksOnHost > static_cast<int>(cores);
}

int64_t spinForHost(int ranksOnHost, unsigned cores) {
  // A spinning waiter holds the core its peer needs when ranks outnumber cores; with a core per
  // rank it answers without a wake-up. Measured: docs/ALGORITHMS.md, "Measured constants".
  return oversubscribedHost(ranksOnHost, cores) ? 0 : 20;
}

Settings resolveSettings(const Options& options, const Config& config) {
  Settings s;
  s.timeout = options.timeout.value_or(std::chrono::milliseconds(config.timeoutMs));
  s.segmentBytes = options.segmentBytes.value_or(static_cast<size_t>(config.segmentBytes));
  s.stagingBytes = static_cast<size_t>(config.stagingBytes);
  s.deviceIpc = options.deviceIpc.value_or(config.deviceIpc != 0);
  s.spinUs = config.spinUs;
  s.overrides = algo::parseAlgorithmOverrides(options.algorithms.value_or(config.algorithms));
  s.deterministic = config.deterministic != 0;
  s.watch.beaconPeriod = std::chrono::milliseconds(config.beaconMs);
  s.watch.heartbeatTimeout = std::chrono::milliseconds(config.heartbeatTimeoutMs);
  s.watch.checkMismatch = config.checkMismatch != 0;
  s.watch.stragglerThreshold = std::chrono::milliseconds(config.stragglerMs);
  s.watch.dumpPath = config.dumpOnTimeout;
  s.watch.tracePath = config.trace;
  s.watch.traceCalls = static_cast<size_t>(config.traceCalls);
  if (s.timeout.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument, "smddp: the timeout must be positive");
  }
  if (s.segmentBytes < 64) {
    throw Error(ErrorCode::kInvalidArgument, "smddp: the segment size must be at least 64 bytes");
  }
  return s;
}

CommunicatorImpl::CommunicatorImpl(std::unique_ptr<transport::Transport> transport,
                                   const Settings& settings, std::shared_ptr<Store> store,
                                   const std::string& prefix,
                                   std::unique_ptr<algo::arena::Arena> arena,
                                   std::unique_ptr<transport::Transport> p2pTransport,
                                   HostArena hostArena)
    : transport_(std::move(transport)),
      arena_(std::move(arena)),
      hostArena_(std::move(hostArena.arena)),
      settings_(settings),
      rank_(transport_->rank()),
      size_(transport_->size()),
      timeoutMs_(settings.timeout.count()) {
  learnTopology(hostArena.layout);
  chooseWaiting();
  if (rank_ == 0) logStart();
  planes_->store = store;
  planes_->prefix = prefix;
  watch_ = std::make_unique<CollectiveWatch>(std::move(store), prefix, rank_, transport_->peers(),
                                             settings_.watch);
  wireExecutor(std::move(p2pTransport), std::move(hostArena.layout));
  // Sequence numbers are assigned under the engine's lock, so they follow the queue's order even
  // when several threads post.
  engine_ = Engine::start([this](RequestState& r) { r.complete(run(r)); },
                          [this](RequestState& r) { describe(r.args, r.desc, r.algorithm); },
                          settings_.timeout);
  publishPlaneFacts();  // this rank's device, for the plane decision at the first CUDA call
}

void CommunicatorImpl::learnTopology(const algo::patterns::HostLayout& layout) {
  const auto& peers = transport_->peers();
  std::set<std::string> hosts;
  for (const auto& p : peers) hosts.insert(p.host);
  topology_.ranks = size_;
  topology_.hosts = hosts.empty() ? 1 : static_cast<int>(hosts.size());
  topology_.arena = arena_ != nullptr;
  topology_.eagerBytes = arena_ ? arena_->eagerBytes() : 0;
  topology_.pool = arena_ != nullptr;  // every rank of the host has a pool with its arena
  topology_.hostArenas = hostArena_ != nullptr && layout.hierarchical();
  topology_.unevenHosts = hostArena_ != nullptr && !topology_.hostArenas;
  const std::string& me = static_cast<size_t>(rank_) < peers.size() ? peers[rank_].host : "";
  std::vector<std::string> masks;
  std::map<std::string, int> perHost;
  for (const auto& p : peers) {
    if (p.host == me) masks.push_back(p.cpus);
    ranksPerHost_ = std::max(ranksPerHost_, ++perHost[p.host]);
  }
  hostCpus_ = common::usableCpusOf(masks);
}

void CommunicatorImpl::chooseWaiting() {
  if (settings_.spinUs >= 0) {
    const auto spin = std::chrono::microseconds(settings_.spinUs);
    waiting_.reset(new common::WaitPolicy(common::WaitPolicy::fixed(spin)));
    return;
  }
  const auto& peers = transport_->peers();
  const std::string& me = static_cast<size_t>(rank_) < peers.size() ? peers[rank_].host : "";
  const int local = transport::ranksOnHost(peers, me);
  const unsigned usable = hostCpus_;
  const unsigned cores = usable > 0 ? usable : std::thread::hardware_concurrency();
  settings_.spinUs = spinForHost(local, cores);
  const bool oversubscribed = oversubscribedHost(local, cores);
  waiting_.reset(new common::WaitPolicy(
      common::WaitPolicy::adaptive(std::chrono::microseconds(settings_.spinUs), oversubscribed)));
  SMDDP_INFO(rank_, local << " rank(s) on this host with " << cores << " usable CPU(s)"
                          << (usable > 0 ? "" : " (the machine's count: masks unknown)")
                          << ": waiters spin " << settings_.spinUs << " us"
                          << (oversubscribed ? "" : ", longer while the CPU is contended"));
}

void CommunicatorImpl::logStart() const {
  SMDDP_INFO(rank_, "smddp " << versionString() << ": " << size_ << " ranks on " << topology_.hosts
                             << " host(s), transport " << transport_->name()
                             << (arena_ ? " + shared-memory arena" : "")
                             << (hostArena_ ? " + an arena per host (hierarchical)" : "")
                             << ", reduction kernels " << reduce::isaName() << ", timeout "
                             << settings_.timeout.count() << " ms");
}

void CommunicatorImpl::wireExecutor(std::unique_ptr<transport::Transport> p2pTransport,
                                    algo::patterns::HostLayout layout) {
  exec_.timeout = settings_.timeout;
  exec_.segmentBytes = settings_.segmentBytes;
  exec_.rankOrder = settings_.deterministic;
  exec_.waiting = waiting_.get();
  if (p2pTransport) {
    p2p_ = std::make_unique<PointToPoint>(std::move(p2pTransport), *waiting_,
                                          arena_ ? &arena_->segment() : nullptr);
  }
  exec_.abortFlag = &aborted_;
  exec_.abortReason = &abortReason_;
  exec_.monitor = watch_->monitor();
  if (arena_) {
    arenaContext_.emplace(arena_.get(), pool_.get());
    exec_.attachment = &*arenaContext_;
  }
  if (!hostArena_) return;
  hostGroups_.place(std::move(layout), rank_);
  ipcHosts_.ranksOf = hostGroups_.layout.ranksOf;
  ipcHosts_.host = hostGroups_.layout.hostOf[static_cast<size_t>(rank_)];
  ipcHosts_.local = hostGroups_.layout.localIndex(rank_);
  hostGroups_.localSettings = exec_;
  // The host's ranks map each other's tensors.
  hostArenaContext_.emplace(hostArena_.get(), pool_.get());
  hostGroups_.localSettings.attachment = &*hostArenaContext_;
  hostGroups_.crossSettings = exec_;
  hostGroups_.crossSettings.segmentBytes = std::min(exec_.segmentBytes, kCrossSegmentBytes);
  exec_.hosts = &hostGroups_;
}

}  // namespace smddp::core
