// SPDX-License-Identifier: Apache-2.0
// Runs collectives: picks the algorithm, gives it an Exec with the collective's deadline, and
// turns any failure into a stored error (a request's, or thrown to a blocking caller). Any error
// after data may have moved breaks the communicator: later collectives fail at once, naming the
// first error, rather than risk mismatched messages.
#include "core/communicator_impl.h"

#include <algorithm>
#include <map>
#include <cstring>
#include <thread>

#include "algorithms/scoped.h"
#include "common/clock.h"
#include "common/cpus.h"
#include "common/logging.h"
#include "core/recycling_allocator.h"
#include "reduce/reducer.h"
#include "smddp/error.h"
#include "smddp/version.h"

namespace smddp::core {

using Clock = std::chrono::steady_clock;

// How long a communicator shutting down waits for its peers' identity after its last
// collective, a broadcast it was the root of (settleDeferredCheck).
constexpr std::chrono::milliseconds kShutdownCheckBound{10000};

CommunicatorImpl::~CommunicatorImpl() {
  closeDevicePlanes();  // settles what is left on NCCL while the watch is there
  p2p_.reset();  // fails what is still in flight, then closes its endpoint
  engine_->stop();
  engine_.reset();
  // Every segment ran or failed: the staging streams drain; the scratch goes after them (or is
  // left mapped when they did not drain).
  if (stager_ && !stager_->drain()) (void)ipc_.release();
  stager_.reset();
  ipc_.reset();
  settleDeferredCheck();
  watch_.reset();  // joins the beacon thread
  transport_.reset();  // closes the endpoint before the op records it might reference go away
  const common::WaitPolicy::Stats w = waiting_->stats();
  SMDDP_INFO(rank_, "waits: " << w.longSpins << " long spins, " << w.yields << " yields ("
                              << w.slowYields << " lost the CPU), " << w.sleeps
                              << " sleeps; a yield costs ~" << w.yieldNs / 1000 << " us"
                              << (w.contended ? " (contended)" : "")
                              << (w.crowded ? ", own threads runnable" : ""));
}

Request CommunicatorImpl::post(algo::CollectiveArgs args) {
  if (estimating()) return estimated(args);
  if (args.memory == MemoryType::kCuda) return postDevice(args);
  auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
  state->engine = engine_.get();
  state->desc.call() = args.call();
  state->args = std::move(args);
  engine_->submit(state);  // describe, under the engine's lock
  return Request(std::move(state));
}

void CommunicatorImpl::runBlocking(algo::CollectiveArgs args) {
  if (estimating()) {
    estimated(args);
    return;
  }
  if (args.memory == MemoryType::kCuda) {
    postDevice(args).wait();
    return;
  }
  algo::CollectiveDesc desc;
  desc.call() = args.call();
  const algo::Algorithm* algorithm = nullptr;
  if (!engine_->enterDirect([&] { describe(args, desc, algorithm); })) {
    post(std::move(args)).wait();  // others are queued or running: behind them, in order
    return;
  }
  inlineRuns_.store(inlineRuns_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
  struct Leave {  // busy_ goes back even if something escapes execute()
    Engine& engine;
    ~Leave() { engine.leaveDirect(); }
  } leave{*engine_};
  if (const std::exception_ptr error = execute(args, desc, algorithm)) {
    std::rethrow_exception(error);
  }
}

bool CommunicatorImpl::CallShape::matches(const algo::CollectiveDesc& d, algo::Scope s) const {
  return known && call.call() == d.call() && scope == s;
}

void CommunicatorImpl::describe(const algo::CollectiveArgs& args, algo::CollectiveDesc& d,
                                const algo::Algorithm*& algorithm) {
  const bool fresh = !lastShape_.matches(d, args.scope);
  if (fresh) {  // derived before it is kept: selection may throw
    CallShape c;
    const bool local =
        size_ == 1 || (d.count == 0 && d.kind != CollectiveKind::kBarrier && !d.uneven());
    if (local) {
      c.algorithm = nullptr;
    } else if (args.scope != algo::Scope::kAll) {  // a host step of a CUDA call across hosts
      c.algorithm = &algo::scopedAlgorithm(d.kind, args.scope);
    } else if (settings_.deterministic && d.reduces()) {
      c.algorithm = &algo::deterministicAlgorithm(d.kind, args.bytes(), topology_);
    } else {
      c.algorithm = &algo::selectAlgorithm(d.kind, args.bytes(), topology_, settings_.overrides);
    }
    c.scope = args.scope;
    c.call = Signature(d, c.algorithm != nullptr ? c.algorithm->name : nullptr);
    c.shape = shapeHash(d, algorithmNameHash(c.call.algorithm));
    c.signature = settings_.watch.checkMismatch ? foldSignature(c.shape) : 0;
    c.known = true;
    lastShape_ = c;
  }
  algorithm = lastShape_.algorithm;
  d.algorithm = lastShape_.call.algorithm;
  d.shape = lastShape_.shape;
  d.signature = lastShape_.signature;
  d.seq = nextSeq_++;
  d.timeout = std::chrono::milliseconds(timeoutMs_.load(std::memory_order_relaxed));
  d.watchIndex = watch_->posted(d.seq, lastShape_.call, coarseNow());
  // A repeat of the last call's shape repeats its algorithm, which was logged then if ever. The
  // sequence number is taken: a failure to log must not lose the request.
  if (fresh && algorithm != nullptr) {
    try {
      logChoice(*algorithm, d, args.bytes());
    } catch (...) {
    }
  }
}

std::exception_ptr CommunicatorImpl::execute(const algo::CollectiveArgs& args,
                                             const algo::CollectiveDesc& desc,
                                             const algo::Algorithm* algorithm) {
  std::exception_ptr error;
  try {
    if (aborted_.load()) {
      throw abortedError(errorHead(rank_, hostName()) + ": " + desc.describe() + " not run");
    }
    if (broken_.load(std::memory_order_acquire)) {
      const std::string reason = brokenReason();
      throw Error(ErrorCode::kBroken, errorHead(rank_, hostName()) + ": " + desc.describe() +
                                          " not run: the communicator is broken by an earlier "
                                          "error: " +
                                          reason);
    }
    const auto now = coarseNow();  // the recorder's start and a deadline of seconds
    watch_->started(desc, now);
    if (algorithm == nullptr) {
      runLocal(args);
    } else {
      // The deadline is never earlier than intended (the coarse clock lags).
      algo::Exec exec(*transport_, resources_, desc, exec_,
                      now + coarseLag() + desc.timeout);
      algo::runCollective(*algorithm, exec, args);
    }
    watch_->finished(desc, nullptr);
  } catch (const Error& e) {
    watch_->finished(desc, &e);
    // Only the error that breaks the communicator is logged: the requests queued behind it fail
    // with kBroken/kAborted too, and a non-blocking loop can queue thousands of them.
    const bool first = !broken_.load(std::memory_order_acquire);
    if (first) SMDDP_WARN(rank_, e.what());
    if (e.code() != ErrorCode::kBroken) markBroken(e.code(), e.what());
    error = std::current_exception();
  } catch (const std::exception& e) {
    const Error internal(ErrorCode::kInternal, errorHead(rank_) + ": " + desc.describe() +
                                                   ": internal error: " + e.what());
    markBroken(ErrorCode::kInternal, internal.what());
    watch_->finished(desc, &internal);
    error = std::make_exception_ptr(internal);
  }
  return error;
}

// size 1, or nothing to move: the result is the input (AVG over one rank is the value itself).
void CommunicatorImpl::runLocal(const algo::CollectiveArgs& args) {
  if (args.kind == CollectiveKind::kAllToAll || args.kind == CollectiveKind::kAllToAllV) {
    if (args.sendPieceBytes(0) > 0) {  // validate: equal to recvPieceBytes(0), disjoint
      std::memcpy(args.recvPiece(0), args.sendPiece(0), args.sendPieceBytes(0));
    }
    return;
  }
  const size_t bytes = args.bytes();
  if (bytes == 0) return;
  if (args.kind == CollectiveKind::kAllGather || args.kind == CollectiveKind::kGather) {
    if (args.block(0) != args.send) std::memcpy(args.block(0), args.send, bytes);
  } else if (args.kind == CollectiveKind::kScatter) {
    if (args.sendBlock(0) != args.recv) std::memcpy(args.recv, args.sendBlock(0), bytes);
  } else if (args.kind != CollectiveKind::kBarrier && args.send != args.recv) {
    std::memcpy(args.recv, args.send, bytes);
  }
}

// Under the engine's lock (describe), which guards loggedChoices_.
void CommunicatorImpl::logChoice(const algo::Algorithm& algorithm,
                                 const algo::CollectiveDesc& desc, size_t bytes) {
  if (!logEnabled(LogLevel::kInfo) || !loggedChoices_.insert(&algorithm).second) return;
  SMDDP_INFO(rank_, toString(desc.kind) << " uses algorithm " << desc.algorithm << " (first at #"
                                        << desc.seq << ", "
                                        << algo::formatBytes(bytes) << ")");
}

// The last collective may have left a check (an arena broadcast's root checks its peers' identity
// in its next collective): run it now and report a mismatch. Nobody can abort a destructor, so the
// wait is bounded by kShutdownCheckBound rather than the collective timeout: peers that entered
// the broadcast published their identity on entry.
void CommunicatorImpl::settleDeferredCheck() {
  if (!arena_ || !arena_->hasDeferred() || aborted_.load() || broken_.load()) return;
  algo::ExecSettings es = exec_;
  es.timeout = std::min(settings_.timeout, kShutdownCheckBound);
  try {
    algo::CollectiveDesc desc = arena_->deferredDesc();
    desc.timeout = es.timeout;  // what its timeout message reports
    algo::Exec exec(*transport_, resources_, desc, es, Clock::now() + es.timeout);
    algo::arena::settleDeferred(exec, algo::arena::Use::kNone);
  } catch (const std::exception& e) {
    SMDDP_WARN(rank_, "at shutdown: " << e.what());
  }
}

void CommunicatorImpl::setTimeout(std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                errorHead(rank_) + ": setTimeout: the timeout must be positive, got " +
                    std::to_string(timeout.count()) + " ms");
  }
  timeoutMs_.store(timeout.count(), std::memory_order_relaxed);
  engine_->setCollectiveTimeout(timeout);
}

void CommunicatorImpl::markBroken(ErrorCode code, const std::string& reason) {
  Communicator::FailureHook hook;
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (!brokenReason_.empty()) return;
    brokenReason_ = reason;
    brokenCode_ = code;
    broken_.store(true, std::memory_order_release);
    if (code != ErrorCode::kAborted) hook = failureHook_;
  }
  if (!hook) return;
  try {
    hook(code, reason);
  } catch (const std::exception& e) {
    SMDDP_WARN(rank_, "the failure hook threw: " << e.what());
  } catch (...) {
    SMDDP_WARN(rank_, "the failure hook threw");
  }
}

std::string CommunicatorImpl::brokenReason() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenReason_;
}

ErrorCode CommunicatorImpl::brokenCode() const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return brokenCode_;
}

void CommunicatorImpl::setFailureHook(Communicator::FailureHook hook) {
  std::lock_guard<std::mutex> lock(stateMutex_);
  failureHook_ = std::move(hook);
}

Error CommunicatorImpl::abortedError(const std::string& what) const {
  std::lock_guard<std::mutex> lock(stateMutex_);
  return Error(ErrorCode::kAborted, what + ": aborted: " + abortReason_);
}

Request CommunicatorImpl::postPointToPoint(const algo::CollectiveArgs& args, int peer,
                                           uint32_t tag) {
  if (!p2p_) {
    throw Error(ErrorCode::kUnsupported, errorHead(rank_) + ": " + toString(args.kind) +
                                             ": this communicator has no point-to-point transport");
  }
  if (estimating()) return estimated(args);
  if (args.memory == MemoryType::kCuda) return postDeviceMessage(args, peer, tag);
  return p2p_->post(args, peer, tag, timeout());
}

Request CommunicatorImpl::postWindowMessage(const algo::CollectiveArgs& args, int peer,
                                            uint32_t tag, std::chrono::milliseconds timeout) {
  if (!p2p_) {
    throw Error(ErrorCode::kUnsupported, errorHead(rank_) +
                                             ": windows need the point-to-point transport, "
                                             "which this communicator does not have");
  }
  return p2p_->post(args, peer, tag, timeout);
}

void CommunicatorImpl::abort(const std::string& reason) {
  {
    std::lock_guard<std::mutex> lock(stateMutex_);
    if (abortReason_.empty()) abortReason_ = reason;  // set once, before the flag reveals it
  }
  aborted_.store(true, std::memory_order_release);
  if (p2p_) p2p_->abort();
  markBroken(ErrorCode::kAborted, errorHead(rank_) + ": communicator aborted: " + reason);
  failDevicePlanes(ErrorCode::kAborted, "communicator aborted: " + reason);
  // A running collective sees aborted_ in its next idle poll and fails; its completion wakes
  // its waiters.
}

}  // namespace smddp::core
