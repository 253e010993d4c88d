// SPDX-License-Identifier: Apache-2.0
// ProgressBeacon: a communicator's light monitor thread. Every period it publishes this rank's
// beacon "<prefix>/progress/<rank>" in the rendezvous store (a heartbeat counter, how many
// collectives were called and completed, the signatures of the last few), and checks the
// failure counter "<prefix>/failures". While a collective of this rank has been stuck for a
// period it also reads its peers' beacons: a heartbeat that stopped for heartbeatTimeout means a
// dead peer (kPeerFailure); a peer that called something else at the same sequence number is a
// mismatch (kMismatch naming both calls). A failure found here or by a collective on this rank is
// published once ("<prefix>/failure" + the counter), so every peer fails within about one period
// instead of waiting out its own timeout. A peer on another host whose beacon stopped is asked
// about through its host (liveness_probe.h): a process that is gone is named within seconds. A
// timeout message asks laggards() which ranks have not entered the collective.
// Why the store and not a control channel of messages: no extra message or posted receive on the
// data path, no reliance on "any source" receives, and it keeps working when the fabric to a peer
// is what broke; the price is latency (one period, 0.5 s by default), fine for failures.
// Invariants: the data path only touches atomics (called / completed / failed); every store
// access is bounded and happens on this thread, or on the engine thread at a failure.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "algorithms/exec_monitor.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "watch/flight_recorder.h"

namespace smddp::watch {

class StragglerExchange;

struct BeaconSettings {
  std::chrono::milliseconds period{500};
  std::chrono::milliseconds heartbeatTimeout{30000};
  bool checkMismatch = true;
  // Stepped once per round after the beacon's own work (null: no straggler detection); it must
  // outlive the beacon.
  StragglerExchange* straggler = nullptr;
};

// One rank's beacon as published in the store.
struct PeerProgress {
  bool present = false;  // false: no beacon could be read
  uint64_t heartbeat = 0;
  uint64_t called = 0;     // collectives the application called (= next sequence number)
  uint64_t completed = 0;  // collectives finished, successfully or not (in order)
  int port = 0;            // its process's liveness port (liveness_probe.h); 0: none
  std::vector<std::pair<uint64_t, std::string>> recent;  // seq, signatureWithAlgorithm
  static constexpr size_t kMaxRecent = 64;           // decode() keeps no more (beacons send 8)
  static constexpr size_t kMaxSignatureText = 4096;  // nor longer signatures

  std::string encode() const;
  static PeerProgress decode(const std::string& text);
  const std::string* signatureAt(uint64_t seq) const;
  std::string summary() const;  // one line for dumps
};

class ProgressBeacon : public algo::ExecMonitor {
 public:
  static constexpr size_t kRecentSignatures = 8;

  // addresses[r]: the IP address rank r's endpoint has, "" when the provider has none (shm,
  // efa); a peer with one (on another host) whose beacon stops is probed (liveness_probe.h).
  ProgressBeacon(std::shared_ptr<Store> store, std::string prefix, int rank,
                 std::vector<std::string> hosts, std::vector<std::string> addresses,
                 const FlightRecorder& recorder, const BeaconSettings& settings);
  ~ProgressBeacon() override;  // stops and joins the thread

  void noteCalled(uint64_t seq) { called_.store(seq + 1, std::memory_order_release); }
  void noteCompleted(uint64_t seq) { completed_.store(seq + 1, std::memory_order_release); }
  // A failure this rank found itself: tells every peer once (bounded store writes). No-op when
  // this rank already knows of a failure elsewhere (the cause is then not ours to announce).
  void publishFailure(ErrorCode code, const std::string& message);

  bool failed() const override { return failed_.load(std::memory_order_acquire); }
  [[noreturn]] void raise(const algo::CollectiveDesc& desc) const override;
  std::string laggards(const algo::CollectiveDesc& desc) const override;
  bool awaitVerdict(std::chrono::milliseconds bound, bool peerGone) const override;
  // Every peer's beacon as read now, one line each (for the failure dump).
  std::string peersText() const;
  std::string who(int rank) const;  // "rank 3 (host)"

 private:
  void threadMain();
  void publish();
  void checkRemoteFailure();
  void checkPeers();
  void stepStraggler();
  void waitForNextRound(std::unique_lock<std::mutex>& lock);  // wakeMutex_ held
  static constexpr int kStragglerSteps = 4;
  // One round's liveness probes (they run on this thread): a few at most, and none more to an
  // address that did not answer (a host cut off answers nothing, for all of its ranks).
  struct ProbeRound {
    int left = 4;
    std::vector<std::string> unanswered;
  };
  void checkPeer(int peer, const PeerProgress& p, uint64_t seq, const std::string* mine,
                 ProbeRound& round);
  // A peer silent for two periods, with an address on another host: asks its host (at most
  // once a period). True when it set the verdict (the process is gone).
  bool probeSilentPeer(int peer, const PeerProgress& p, std::chrono::milliseconds silent,
                       ProbeRound& round);
  void setVerdict(ErrorCode code, const std::string& message, bool announce);
  void announce(ErrorCode code, const std::string& message);  // store writes, at most once
  void flushAnnouncement();  // monitor thread: performs a pending publishFailure()
  // storeError (optional) is set when the store itself failed, not just the key was missing.
  PeerProgress read(int peer, std::string* storeError = nullptr) const;
  std::string key(const std::string& what) const { return prefix_ + "/" + what; }

  std::shared_ptr<Store> store_;
  std::string prefix_;
  int rank_;
  int size_;
  std::vector<std::string> hosts_;
  std::vector<std::string> addresses_;
  int port_ = 0;  // this process's liveness port, published in the beacon
  const FlightRecorder& recorder_;
  BeaconSettings settings_;
  std::chrono::milliseconds readTimeout_;

  std::atomic<uint64_t> called_{0};
  std::atomic<uint64_t> completed_{0};
  std::atomic<bool> failed_{false};
  mutable std::mutex verdictMutex_;  // guards the verdict and published_
  ErrorCode verdictCode_ = ErrorCode::kInternal;
  std::string verdictMessage_;
  bool published_ = false;
  bool announcePending_ = false;  // publishFailure() left the store writes to the monitor thread
  mutable std::atomic<bool> announceRequested_{false};  // wakes the monitor thread early
  std::atomic<uint64_t> roundsBegun_{0};  // monitor rounds (announce, publish, read the peers)
  std::atomic<uint64_t> roundsDone_{0};
  ErrorCode pendingCode_ = ErrorCode::kInternal;
  std::string pendingMessage_;

  // Monitor thread only.
  uint64_t heartbeat_ = 0;
  int64_t failuresSeen_ = 0;
  uint64_t stuckSeq_ = ~uint64_t{0};
  std::chrono::steady_clock::time_point stuckSince_;
  std::vector<uint64_t> lastHeartbeat_;
  std::vector<std::chrono::steady_clock::time_point> heartbeatChanged_;
  std::vector<std::chrono::steady_clock::time_point> probed_;

  mutable std::mutex wakeMutex_;
  mutable std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace smddp::watch
