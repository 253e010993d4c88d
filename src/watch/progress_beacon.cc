// SPDX-License-Identifier: Apache-2.0
// ProgressBeacon (see progress_beacon.h). Store keys under the communicator's prefix:
//   progress/<rank>  this rank's beacon (PeerProgress text), rewritten every period
//   failure          "<origin rank>\n<ErrorCode>\n<message>" of the latest first-hand failure
//   failures         how many first-hand failures were announced (read with add(key, 0))
#include "watch/progress_beacon.h"

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "common/logging.h"
#include "smddp/helper_thread.h"
#include "watch/liveness_probe.h"
#include "watch/straggler_exchange.h"

namespace smddp::watch {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kMaxLaggardsNamed = 8;
// How long a liveness probe may wait for the peer's host (it runs on the beacon thread).
constexpr std::chrono::milliseconds kProbeBound{250};

std::string ordinal(uint64_t countDone) {
  return countDone == 0 ? std::string("none yet") : "#" + std::to_string(countDone - 1);
}

}  // namespace

ProgressBeacon::ProgressBeacon(std::shared_ptr<Store> store, std::string prefix, int rank,
                               std::vector<std::string> hosts, std::vector<std::string> addresses,
                               const FlightRecorder& recorder, const BeaconSettings& settings)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(static_cast<int>(hosts.size())),
      hosts_(std::move(hosts)),
      addresses_(std::move(addresses)),
      port_(livenessPort()),
      recorder_(recorder),
      settings_(settings),
      readTimeout_(std::clamp(settings.period, std::chrono::milliseconds(50),
                              std::chrono::milliseconds(1000))),
      lastHeartbeat_(hosts_.size(), 0),
      heartbeatChanged_(hosts_.size(), Clock::now()),
      probed_(hosts_.size(), Clock::now() - std::chrono::hours(1)) {  // never probed yet
  addresses_.resize(hosts_.size());
  thread_ = startHelperThread("smddp-beacon", [this] { threadMain(); });
}

ProgressBeacon::~ProgressBeacon() {
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::string ProgressBeacon::who(int rank) const {
  std::string s = "rank " + std::to_string(rank);
  if (rank >= 0 && rank < size_ && !hosts_[static_cast<size_t>(rank)].empty()) {
    s += " (" + hosts_[static_cast<size_t>(rank)] + ")";
  }
  return s;
}

void ProgressBeacon::threadMain() {
  std::unique_lock<std::mutex> lock(wakeMutex_);
  while (!stop_) {
    lock.unlock();
    // A request made from here on is served by this round (awaitVerdict counts on it).
    announceRequested_.store(false);
    roundsBegun_.fetch_add(1, std::memory_order_acq_rel);
    // Each step on its own: a store call that fails (or times out) must not skip the liveness
    // check of the peers, which is what notices a hung rank.
    drainLivenessPort();  // what probed this process
    for (void (ProgressBeacon::*step)() :
         {&ProgressBeacon::flushAnnouncement, &ProgressBeacon::publish,
          &ProgressBeacon::checkRemoteFailure, &ProgressBeacon::checkPeers,
          &ProgressBeacon::stepStraggler}) {
      try {
        (this->*step)();
      } catch (const std::exception& e) {
        SMDDP_WARN(rank_, "progress beacon: " << e.what());
      }
    }
    roundsDone_.fetch_add(1, std::memory_order_acq_rel);
    lock.lock();
    waitForNextRound(lock);
  }
  lock.unlock();
  // A failure raised just before the communicator was destroyed (the process is exiting with it)
  // must still reach the peers: they would otherwise report this rank's death instead of its error.
  try {
    flushAnnouncement();
  } catch (const std::exception& e) {
    SMDDP_WARN(rank_, "progress beacon: " << e.what());
  }
}

void ProgressBeacon::publish() {
  PeerProgress me;
  me.present = true;
  me.heartbeat = ++heartbeat_;
  me.called = called_.load(std::memory_order_acquire);
  me.completed = completed_.load(std::memory_order_acquire);
  me.port = port_;
  const uint64_t first = me.called > kRecentSignatures ? me.called - kRecentSignatures : 0;
  for (uint64_t seq = first; seq < me.called; ++seq) {
    if (auto e = recorder_.find(seq)) me.recent.emplace_back(seq, signatureWithAlgorithm(e->sig));
  }
  store_->set(key("progress/" + std::to_string(rank_)), me.encode());
}

// The straggler detector (rank 0's exchange) also steps between rounds (kStragglerSteps per
// period): the other ranks answer once per round, and rank 0 then reads the answers within a
// quarter period instead of a whole one, so a straggler is named about a period after its window.
// The others poll once a round: the store's load grows by one counter read per rank and period.
// A failure or stop cuts the wait short.
void ProgressBeacon::waitForNextRound(std::unique_lock<std::mutex>& lock) {
  const auto woken = [&] { return stop_ || announceRequested_.load(); };
  const int steps =
      settings_.straggler != nullptr && settings_.straggler->detects() ? kStragglerSteps : 1;
  for (int i = 1; i < steps; ++i) {
    if (wake_.wait_for(lock, settings_.period / steps, woken)) return;
    lock.unlock();
    try {
      stepStraggler();
    } catch (const std::exception& e) {
      SMDDP_WARN(rank_, "progress beacon: " << e.what());
    }
    lock.lock();
  }
  wake_.wait_for(lock, settings_.period / steps, woken);
}

void ProgressBeacon::stepStraggler() {
  if (settings_.straggler != nullptr && !failed()) settings_.straggler->step();
}

void ProgressBeacon::checkRemoteFailure() {
  const int64_t n = store_->add(key("failures"), 0);
  if (n <= failuresSeen_) return;
  failuresSeen_ = n;
  const std::string value = store_->get(key("failure"), readTimeout_);
  const size_t a = value.find('\n');
  const size_t b = a == std::string::npos ? a : value.find('\n', a + 1);
  if (b == std::string::npos) return;
  const int origin = std::atoi(value.c_str());
  if (origin == rank_) return;
  if (origin < 0 || origin >= size_) {
    SMDDP_WARN(rank_, "ignored a failure announced for rank " << origin << ", outside the group of "
                          << size_ << " (written by a process outside the job?)");
    return;
  }
  auto code = static_cast<ErrorCode>(std::atoi(value.c_str() + a + 1));
  // A timeout, a dead peer or a mismatch is the same fact here; anything else is a peer failure.
  if (code != ErrorCode::kTimeout && code != ErrorCode::kMismatch) code = ErrorCode::kPeerFailure;
  setVerdict(code, "ended because " + who(origin) + " failed: " + value.substr(b + 1), false);
}

// Reads the peers only while a collective of ours has been pending for a whole period.
void ProgressBeacon::checkPeers() {
  const uint64_t called = called_.load(std::memory_order_acquire);
  const uint64_t seq = completed_.load(std::memory_order_acquire);
  const auto now = Clock::now();
  if (called <= seq || failed()) {
    stuckSeq_ = ~uint64_t{0};
    return;
  }
  if (seq != stuckSeq_) {
    stuckSeq_ = seq;
    stuckSince_ = now;
    return;
  }
  if (now - stuckSince_ < settings_.period) return;
  std::string mine;
  if (settings_.checkMismatch) {
    if (auto e = recorder_.find(seq)) mine = signatureWithAlgorithm(e->sig);
  }
  ProbeRound round;
  for (int peer = 0; peer < size_ && !failed(); ++peer) {
    if (peer == rank_) continue;
    checkPeer(peer, read(peer), seq, mine.empty() ? nullptr : &mine, round);
  }
}

void ProgressBeacon::checkPeer(int peer, const PeerProgress& p, uint64_t seq,
                               const std::string* mine, ProbeRound& round) {
  const auto now = Clock::now();
  const auto i = static_cast<size_t>(peer);
  const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(
      now - std::max(heartbeatChanged_[i], stuckSince_));
  if (p.present && p.heartbeat != lastHeartbeat_[i]) {
    lastHeartbeat_[i] = p.heartbeat;
    heartbeatChanged_[i] = now;
  } else if (silent < settings_.heartbeatTimeout) {
    if (probeSilentPeer(peer, p, silent, round)) return;
  } else {
    setVerdict(ErrorCode::kPeerFailure,
               who(peer) + " is gone: its progress beacon has not moved for " +
                   std::to_string(silent.count()) + " ms (process died or hung, or host lost); " +
                   "last collective completed by " + who(peer) + ": " + ordinal(p.completed),
               true);
    return;
  }
  if (mine == nullptr || !p.present || p.called <= seq) return;
  const std::string* theirs = p.signatureAt(seq);
  if (theirs == nullptr || *theirs == *mine) return;
  setVerdict(ErrorCode::kMismatch,
             "collective mismatch at #" + std::to_string(seq) + ": " +
                 mismatchText(rank_, *mine, peer, *theirs),
             true);
}

bool ProgressBeacon::probeSilentPeer(int peer, const PeerProgress& p,
                                     std::chrono::milliseconds silent, ProbeRound& round) {
  const auto i = static_cast<size_t>(peer);
  const auto now = Clock::now();
  if (silent < 2 * settings_.period || p.port <= 0 || now - probed_[i] < settings_.period ||
      round.left <= 0) {
    return false;
  }
  const std::string& ip = addresses_[i];
  if (hosts_[i] == hosts_[static_cast<size_t>(rank_)] || !probeableAddress(ip) ||
      std::find(round.unanswered.begin(), round.unanswered.end(), ip) != round.unanswered.end()) {
    return false;
  }
  probed_[i] = now;
  --round.left;
  const Liveness answer = probeLiveness(ip, p.port, kProbeBound);
  if (answer == Liveness::kUnknown) round.unanswered.push_back(ip);
  SMDDP_INFO(rank_, who(peer) << " silent for " << silent.count() << " ms; asked its host at "
                              << ip << ":" << p.port << ": "
                              << (answer == Liveness::kAlive  ? "alive"
                                  : answer == Liveness::kGone ? "gone"
                                                              : "no answer"));
  if (answer != Liveness::kGone) return false;
  setVerdict(ErrorCode::kPeerFailure,
             who(peer) + " is gone: its process no longer exists (its host refused a "
                         "connection to its liveness port " + ip + ":" + std::to_string(p.port) +
                 "; its progress beacon has not moved for " + std::to_string(silent.count()) +
                 " ms); last collective completed by " + who(peer) + ": " +
                 ordinal(p.completed),
             true);
  return true;
}

PeerProgress ProgressBeacon::read(int peer, std::string* storeError) const {
  const auto start = Clock::now();
  try {
    return PeerProgress::decode(store_->get(key("progress/" + std::to_string(peer)), readTimeout_));
  } catch (const std::exception& e) {
    // A key that is not there answers within readTimeout_ with a "not set" / timeout error; an
    // answer much later, or any other error, means the store itself is unreachable.
    const std::string what = e.what();
    const bool missingKey = what.find("not set") != std::string::npos ||
                            what.find("imeout") != std::string::npos ||
                            what.find("timed out") != std::string::npos;
    const bool late = Clock::now() - start > readTimeout_ + std::chrono::seconds(1);
    if (storeError != nullptr && (late || !missingKey)) *storeError = what;
    return PeerProgress();
  }
}

void ProgressBeacon::setVerdict(ErrorCode code, const std::string& message, bool announce) {
  {
    std::lock_guard<std::mutex> lock(verdictMutex_);
    if (failed_.load()) return;
    verdictCode_ = code;
    verdictMessage_ = message;
    failed_.store(true, std::memory_order_release);
  }
  SMDDP_WARN(rank_, message);
  if (announce)
    this->announce(code, errorHead(rank_, hosts_[static_cast<size_t>(rank_)]) + ": " + message);
}

// Called on the thread whose collective failed: the store writes happen on the monitor thread, so
// an unreachable store host cannot delay the error this thread is about to raise.
void ProgressBeacon::publishFailure(ErrorCode code, const std::string& message) {
  if (failed()) return;  // known from elsewhere, or found (and announced) by this thread
  {
    std::lock_guard<std::mutex> lock(verdictMutex_);
    if (published_ || announcePending_) return;
    announcePending_ = true;
    pendingCode_ = code;
    pendingMessage_ = message;
  }
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    announceRequested_.store(true);
  }
  wake_.notify_all();
}

bool ProgressBeacon::awaitVerdict(std::chrono::milliseconds bound, bool peerGone) const {
  const uint64_t begun = roundsBegun_.load(std::memory_order_acquire);
  {
    std::lock_guard<std::mutex> lock(wakeMutex_);
    announceRequested_.store(true);  // run a round now: read the peers' announcements
  }
  wake_.notify_all();
  const auto deadline = Clock::now() + bound;
  while (!failed() && Clock::now() < deadline &&
         !(peerGone && roundsDone_.load(std::memory_order_acquire) > begun)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return failed();
}

void ProgressBeacon::flushAnnouncement() {
  ErrorCode code;
  std::string message;
  {
    std::lock_guard<std::mutex> lock(verdictMutex_);
    if (!announcePending_) return;
    announcePending_ = false;
    code = pendingCode_;
    message = std::move(pendingMessage_);
  }
  announce(code, message);
}

void ProgressBeacon::announce(ErrorCode code, const std::string& message) {
  {
    std::lock_guard<std::mutex> lock(verdictMutex_);
    if (published_) return;
    published_ = true;
  }
  try {
    store_->set(key("failure"), std::to_string(rank_) + "\n" +
                                    std::to_string(static_cast<int>(code)) + "\n" + message);
    store_->add(key("failures"), 1);
  } catch (const std::exception& e) {
    SMDDP_WARN(rank_, "could not announce a failure to the peers: " << e.what());
  }
}

void ProgressBeacon::raise(const algo::CollectiveDesc& desc) const {
  std::lock_guard<std::mutex> lock(verdictMutex_);
  throw Error(verdictCode_, errorHead(rank_, hosts_[static_cast<size_t>(rank_)]) + ": " +
                                desc.describe() + ": " + verdictMessage_);
}

std::string ProgressBeacon::laggards(const algo::CollectiveDesc& desc) const {
  std::string out;
  size_t named = 0, more = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    std::string storeError;
    const PeerProgress p = read(peer, &storeError);
    if (!storeError.empty()) {
      // The store itself did not answer (say, this host is cut off): the other beacons cannot be
      // read either, and each try would delay this error by another store timeout.
      return out + "; the progress of the other ranks is unknown: the store did not answer (" +
             storeError + ")";
    }
    if (p.present && p.called > desc.seq) continue;
    if (named == kMaxLaggardsNamed) {
      ++more;
      continue;
    }
    ++named;
    out += "; " + who(peer) +
           (p.present ? " has not entered it; last collective completed by rank " +
                            std::to_string(peer) + ": " + ordinal(p.completed)
                      : " has published no progress beacon");
  }
  if (more > 0) out += "; and " + std::to_string(more) + " more rank(s) that have not entered it";
  return out;
}

std::string ProgressBeacon::peersText() const {
  std::string out;
  for (int peer = 0; peer < size_; ++peer) {
    out += who(peer) + ": " + (peer == rank_ ? std::string("(this rank)") : read(peer).summary()) +
           "\n";
  }
  return out;
}

}  // namespace smddp::watch
