// SPDX-License-Identifier: Apache-2.0
// CommunicatorImpl: the state behind smddp::Communicator — transport, engine, sequence numbers,
// algorithm choice and the broken/aborted state. Tests construct it directly over the loopback
// transport; Communicator::create() builds it over libfabric.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "algorithms/arena/arena.h"
#include "algorithms/arena/context.h"
#include "algorithms/arena/pool.h"
#include "algorithms/exec.h"
#include "algorithms/registry.h"
#include "common/config.h"
#include "core/device_planes.h"
#include "core/engine.h"
#include "core/estimator.h"
#include "core/point_to_point.h"
#include "planes/device_work.h"
#include "planes/smddp/path.h"
#include "planes/smddp/stager.h"
#include "smddp/communicator.h"
#include "transport/transport.h"
#include "watch/collective_watch.h"
#include "watch/signature.h"

namespace smddp::planes::nccl {
class NcclPlane;
class NcclWork;
}  // namespace smddp::planes::nccl

namespace smddp::core {

using planes::DevicePath;
using planes::PlaneFacts;
using planes::DevicePathFacts;
using planes::DeviceStager;
using planes::IpcHosts;
using planes::IpcPeers;
using planes::StagedCall;
using planes::chooseDevicePath;
using watch::CollectiveWatch;
using watch::Signature;
using watch::WatchSettings;
using watch::foldSignature;

// This rank's host's arena and groups, for a communicator over several hosts with the same number
// (>= 2) of ranks on each (algorithms/patterns/hosts.h); empty otherwise.
struct HostArena {
  std::unique_ptr<algo::arena::Arena> arena;
  algo::patterns::HostLayout layout;  // who is on which host
};

// Options resolved against the configuration: every field set.
struct Settings {
  std::chrono::milliseconds timeout{300000};
  size_t segmentBytes = 1048576;
  size_t stagingBytes = 4194304;  // pipeline segment of CUDA calls staged through host memory
  device::Device* device = nullptr;  // the device of CUDA calls; null: device::processDevice()
  bool deviceIpc = false;            // within a host, CUDA collectives through CUDA IPC
  int64_t spinUs = -1;  // -1: automatic (see spinForHost)
  algo::AlgorithmOverrides overrides;
  bool deterministic = false;  // SMDDP_DETERMINISTIC: reductions in rank order (registry.h)
  WatchSettings watch;  // beacon, heartbeat, mismatch check, dump (collective_watch.h)
};
Settings resolveSettings(const Options& options, const Config& config);

// Whether a host's ranks outnumber the CPUs they may use (cores 0: unknown, taken as not).
bool oversubscribedHost(int ranksOnHost, unsigned cores);
// The busy-poll budget for SMDDP_SPIN_US=-1: spinning only pays when every rank of this host has
// a core; oversubscribed, it burns the time slice of the very peer being waited for.
int64_t spinForHost(int ranksOnHost, unsigned cores);

class CommunicatorImpl {
 public:
  // store and prefix (optional) carry the progress beacons (watch/progress_beacon.h); arena
  // (optional) enables the shared-memory algorithms (every rank on one host).
  // p2pTransport (optional) carries send and recv (point_to_point.h): a second endpoint.
  // hostArena (optional): this rank's host's arena and groups (HostArena); enables the
  // hierarchical algorithms.
  CommunicatorImpl(std::unique_ptr<transport::Transport> transport, const Settings& settings,
                   std::shared_ptr<Store> store = nullptr, const std::string& prefix = "",
                   std::unique_ptr<algo::arena::Arena> arena = nullptr,
                   std::unique_ptr<transport::Transport> p2pTransport = nullptr,
                   HostArena hostArena = {});
  ~CommunicatorImpl();

  int rank() const { return rank_; }
  int size() const { return size_; }
  std::string provider() const { return transport_->name(); }
  const Settings& settings() const { return settings_; }
  const transport::Transport& transport() const { return *transport_; }
  const CollectiveWatch& watch() const { return *watch_; }

  // Validated arguments in, a queued request out. Throws Error for bad arguments without
  // consuming a sequence number.
  Request post(algo::CollectiveArgs args);
  // Validated arguments in; returns once the collective completed on this rank, throwing its
  // Error. Runs it on the calling thread without a request when the engine is idle (one lock
  // pair and one busy_ exchange per call); otherwise posts it and waits.
  void runBlocking(algo::CollectiveArgs args);
  // Blocking collectives run on the caller's thread without a request so far (tests).
  uint64_t inlineRuns() const { return inlineRuns_.load(std::memory_order_relaxed); }
  const std::shared_ptr<algo::arena::Pool>& pool() const { return pool_; }
  std::map<std::string, uint64_t> memoryStats();  // Communicator::memoryStats
  // CUDA calls that went through CUDA IPC so far: all, or of one kind.
  uint64_t ipcCalls() const {
    uint64_t sum = 0;
    for (const auto& c : ipcCalls_) sum += c.load(std::memory_order_relaxed);
    return sum;
  }
  uint64_t ipcCalls(CollectiveKind kind) const {
    return ipcCalls_[static_cast<size_t>(kind)].load(std::memory_order_relaxed);
  }

  // Time estimates (Communicator::beginEstimate): while on, post, runBlocking and
  // postPointToPoint cost their call (estimator.h) and return it completed, running nothing.
  // begin throws Error(kInvalidArgument) when already on, or when SMDDP_COST_MODEL's file cannot
  // be used; end when not on. end returns the seconds costed since begin.
  void beginEstimate();
  double endEstimate();
  bool estimating() const { return estimating_.load(std::memory_order_acquire); }
  // The cost of one call and the algorithm it would run (Communicator::estimateCall).
  double estimateCall(const algo::CollectiveArgs& args, std::string* algorithm);

  // The plane this communicator's CUDA calls take, "nccl" or "smddp" (planes/choice.h), and why;
  // decided at the first CUDA call or query, whichever comes first, from what every rank
  // published at creation (bounded by timeout()). Throws Error when the ranks' SMDDP_GPU_PLANE cannot agree.
  std::string dataPlane();
  std::string dataPlaneWhy();
  // Communicator::shrinkDevicePlaneOf and ncclFormedBy (communicator_nccl.cc).
  void shrinkDevicePlaneOf(CommunicatorImpl& parent, const std::vector<int>& excluded);
  std::string ncclFormedBy();
  // Communicator::allocateDevice (communicator_planes.cc).
  std::shared_ptr<void> allocateDevice(size_t bytes, int device);

  // A request that is already done (nothing to run).
  Request completedRequest(CollectiveKind kind);
  // The next window's number (Communicator::createWindow).
  int nextWindowId() { return windows_.fetch_add(1, std::memory_order_relaxed); }
  // This rank's memory registered in live windows (shared with them: a window may outlive this).
  const std::shared_ptr<std::atomic<uint64_t>>& windowBytes() const { return windowBytes_; }

  // A checked send or recv (args.kind kSend / kRecv) to or from `peer` (transport::kAnyPeer for
  // a recv from any rank), bounded by timeout(). Error(kUnsupported) without a p2p transport.
  // A window's message (window_impl.h): never costed by an estimate (windows refuse to run then),
  // bounded by `timeout` (its own deadline: the operation is withdrawn when it passes).
  Request postWindowMessage(const algo::CollectiveArgs& args, int peer, uint32_t tag,
                            std::chrono::milliseconds timeout);
  Request postPointToPoint(const algo::CollectiveArgs& args, int peer, uint32_t tag);

  // Fails pending and later collectives with kAborted naming `reason`; breaks the communicator.
  void abort(const std::string& reason);
  std::string brokenReason() const;
  ErrorCode brokenCode() const;
  void setFailureHook(Communicator::FailureHook hook);
  // The bound of every collective posted from now on (those already posted keep theirs).
  // Throws Error(kInvalidArgument) unless timeout > 0.
  void setTimeout(std::chrono::milliseconds timeout);
  std::chrono::milliseconds timeout() const {
    return std::chrono::milliseconds(timeoutMs_.load(std::memory_order_relaxed));
  }

 private:
  // Construction's steps (communicator_setup.cc), in order. The topology: hosts, ranks per host,
  // the host's usable CPUs, what the algorithms may use (topology_).
  void learnTopology(const algo::patterns::HostLayout& layout);
  // How waiters wait (waiting_): SMDDP_SPIN_US, or adaptive from the ranks per usable CPU.
  void chooseWaiting();
  void logStart() const;  // rank 0's INFO line: version, ranks, hosts, transport, arenas
  // exec_'s settings, the arenas' contexts, the host groups and the point-to-point engine.
  void wireExecutor(std::unique_ptr<transport::Transport> p2pTransport,
                    algo::patterns::HostLayout layout);

  // Under the engine's lock, in queue order: the algorithm, shape hash and tag signature
  // (derived once per run of identical calls), the sequence number, the recorder's post entry.
  // d holds the call (setCall) on entry.
  void describe(const algo::CollectiveArgs& args, algo::CollectiveDesc& d,
                const algo::Algorithm*& algorithm);
  // Runs one described collective (algorithm nullptr: locally); returns its error, or null.
  std::exception_ptr execute(const algo::CollectiveArgs& args, const algo::CollectiveDesc& desc,
                             const algo::Algorithm* algorithm);
  void runLocal(const algo::CollectiveArgs& args);
  // The device planes (communicator_planes.cc, communicator_nccl.cc): this rank's facts in the
  // store at creation; the decision; a CUDA call or message to the plane that runs it.
  void publishPlaneFacts();
  planes::Plane decidePlane();
  // Warns once when a CUDA call's device is not the one published at creation.
  void checkPublishedDevice(const algo::CollectiveArgs& args);
  Request postDevice(const algo::CollectiveArgs& args);
  Request postDeviceMessage(const algo::CollectiveArgs& args, int peer, uint32_t tag);
  // Whether the estimator costs a CUDA call as the NCCL plane's: the decided plane, or before
  // the decision the one this rank alone would take (estimates communicate nothing).
  bool costsOnNccl(const algo::CollectiveArgs& args);
  // The NCCL plane's verdict hook: abort, broken, the beacons' failure, a same-host peer that
  // exited or stopped ("" while none).
  std::string deviceVerdict(ErrorCode* code);
  void startPeerChecks();
  // The NCCL plane, formed by the first call that takes it (every rank, in the same call).
  planes::nccl::NcclPlane& ncclPlane(const algo::CollectiveArgs& args);
  void describeNccl(algo::CollectiveDesc& d);  // under the engine's lock
  std::function<void(std::exception_ptr)> ncclCompletion(const std::shared_ptr<RequestState>& state,
                                                         bool collective);
  Request postNccl(const algo::CollectiveArgs& args);
  Request postNcclMessage(const algo::CollectiveArgs& args, int peer);
  void failDevicePlanes(ErrorCode code, const std::string& reason);
  void closeDevicePlanes();
  // A CUDA call: staged through pinned host memory (planes/smddp/stager.h), one request per segment;
  // returns the last one's.
  Request postStaged(const algo::CollectiveArgs& args);
  // Runs a request: for a staged segment, once its input reached host memory, then lets its
  // output copies go whatever happened.
  std::exception_ptr run(RequestState& r);
  DeviceStager& stager(const algo::CollectiveArgs& args);
  // A send or recv of CUDA memory: through a pinned host buffer (a send copies to it first, the
  // caller waiting, bounded, for that copy; a recv's copy to the device waits on the device for
  // the message), or handed to a transport that moves CUDA memory itself (planes/smddp/path.h,
  // kDirect; unvalidated) once the caller's stream is done with it.
  Request postStagedMessage(const algo::CollectiveArgs& args, int peer, uint32_t tag);
  // Queues one request per segment of a staged call; returns the last one's.
  Request submitSegments(const std::shared_ptr<StagedCall>& call);
  // The path of this CUDA call: kIpc or kIpcHosts through CUDA IPC (planes/smddp/ipc_peers.h), else kStaged.
  // The first eligible call connects the host's ranks' scratch (connectIpc: collectively, so every
  // rank takes the same path).
  DevicePath ipcPath(const algo::CollectiveArgs& args);
  bool connectIpc(const algo::CollectiveArgs& args);
  // Records the first unrecoverable error; the first one (but for kAborted) runs the failure
  // hook, outside the state lock, before returning.
  void markBroken(ErrorCode code, const std::string& reason);
  // An error of a collective that met abort(), naming the reason given there.
  Error abortedError(const std::string& what) const;
  void settleDeferredCheck();
  // The estimator, made at the first estimate (it measures this machine's rates then).
  Estimator& estimator();
  // The call costed into the running estimate; a completed request.
  Request estimated(const algo::CollectiveArgs& args);
  void logChoice(const algo::Algorithm& algorithm, const algo::CollectiveDesc& desc, size_t bytes);

  std::unique_ptr<transport::Transport> transport_;
  std::unique_ptr<algo::arena::Arena> arena_;
  // Shareable tensor memory: the process's (algo::arena::Pool), shared with its tensors.
  std::shared_ptr<algo::arena::Pool> pool_ = algo::arena::Pool::process();
  std::unique_ptr<algo::arena::Arena> hostArena_;
  // What the arena algorithms reach through exec_ and hostGroups_.localSettings (set with arena_
  // and hostArena_).
  std::optional<algo::arena::Context> arenaContext_;
  std::optional<algo::arena::Context> hostArenaContext_;
  algo::HostGroups hostGroups_;  // set with hostArena_
  Settings settings_;
  int rank_;
  int size_;
  algo::Topology topology_;
  algo::ExecResources resources_;
  std::atomic<bool> aborted_{false};
  std::atomic<int64_t> timeoutMs_;  // settings_.timeout until setTimeout(); read by describe()
  mutable std::mutex stateMutex_;  // guards brokenReason_, brokenCode_, abortReason_, failureHook_
  std::string brokenReason_;
  ErrorCode brokenCode_ = ErrorCode::kInternal;
  std::string abortReason_;  // set once, before aborted_; Execs read it once they see aborted_
  Communicator::FailureHook failureHook_;
  std::atomic<bool> broken_{false};  // brokenReason_ is set (read without the mutex per run)
  std::set<const algo::Algorithm*> loggedChoices_;  // guarded by the engine's lock
  // What describe derived for the last call's arguments (guarded by the engine's lock).
  struct CallShape {
    bool known = false;
    Signature call;                              // with the algorithm's name (nullptr: local)
    const algo::Algorithm* algorithm = nullptr;  // nullptr: run locally
    uint64_t shape = 0;
    uint16_t signature = 0;
    algo::Scope scope = algo::Scope::kAll;
    bool matches(const algo::CollectiveDesc& d, algo::Scope s) const;
  };
  CallShape lastShape_;
  uint64_t nextSeq_ = 0;  // guarded by the engine's lock (its Poster assigns it)
  std::atomic<uint64_t> inlineRuns_{0};  // written by the holder of the engine's busy flag
  std::unique_ptr<CollectiveWatch> watch_;
  std::unique_ptr<common::WaitPolicy> waiting_;  // how its waiters spin, yield and sleep
  algo::ExecSettings exec_;  // this communicator's knobs for every Exec (set once watch_ exists)
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<PointToPoint> p2p_;  // null: no send / recv
  std::mutex stagerMutex_;                // guards the creation of stager_
  // Held from staging a CUDA call on the device to queueing its requests, so that the device
  // and the engine see concurrent posts in one order.
  std::mutex stagedPostMutex_;
  std::unique_ptr<DeviceStager> stager_;  // made by the first CUDA call
  enum class IpcState { kUntried, kOn, kOff };
  IpcState ipcState_ = IpcState::kUntried;  // guarded by stagerMutex_ after the first call
  std::unique_ptr<IpcPeers> ipc_;           // set when kOn
  IpcHosts ipcHosts_;  // this rank's place among the hosts (set with hostGroups_)
  static constexpr size_t kKinds = static_cast<size_t>(CollectiveKind::kControl) + 1;
  std::atomic<uint64_t> ipcCalls_[kKinds] = {};  // by CollectiveKind
  std::mutex estimatorMutex_;               // guards the creation of estimator_
  std::unique_ptr<Estimator> estimator_;    // made by the first estimate
  std::atomic<bool> estimating_{false};
  std::atomic<int> windows_{0};
  std::shared_ptr<std::atomic<uint64_t>> windowBytes_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::unique_ptr<DevicePlanes> planes_ = std::make_unique<DevicePlanes>();
  unsigned hostCpus_ = 0;  // CPUs this host's ranks may use together (0: unknown)
  int ranksPerHost_ = 1;   // the largest host's
};

}  // namespace smddp::core
