// SPDX-License-Identifier: Apache-2.0
// CollectiveWatch: everything a communicator does to never hang silently, behind four calls from
// CommunicatorImpl: posted / started / finished, and monitor() for Exec. It owns the flight
// recorder (last 256 collectives), the progress beacon (liveness, failure propagation, mismatch
// naming; only with a store and SMDDP_BEACON_MS > 0), the straggler detector that rides on the
// beacon (SMDDP_STRAGGLER_MS > 0), the failure dump (SMDDP_DUMP_ON_TIMEOUT) and the trace
// (SMDDP_TRACE).
// Invariant: the per-collective cost is three lock-free recorder writes (a few relaxed stores
// each), two atomic stores and one coarse clock read (end time); post and start times come from
// the caller; with straggler detection, two precise clock reads and two sample writes (a few
// relaxed stores). Nothing allocates per collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "algorithms/collective.h"
#include "algorithms/exec_monitor.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "transport/transport.h"
#include "watch/flight_recorder.h"
#include "watch/progress_beacon.h"
#include "watch/straggler_exchange.h"
#include "watch/straggler_samples.h"
#include "watch/trace_recorder.h"

namespace smddp::watch {

struct WatchSettings {
  std::chrono::milliseconds beaconPeriod{500};      // SMDDP_BEACON_MS; 0: no beacon
  std::chrono::milliseconds heartbeatTimeout{30000};  // SMDDP_HEARTBEAT_TIMEOUT_MS
  bool checkMismatch = true;                        // SMDDP_CHECK_MISMATCH
  std::string dumpPath;                             // SMDDP_DUMP_ON_TIMEOUT
  std::chrono::milliseconds stragglerThreshold{2};  // SMDDP_STRAGGLER_MS; 0: no detection
  std::string tracePath;                            // SMDDP_TRACE; "": no trace
  size_t traceCalls = 10000;                        // SMDDP_TRACE_CALLS
};

class CollectiveWatch {
 public:
  // store may be null: then only the recorder and the dump work (no beacon).
  CollectiveWatch(std::shared_ptr<Store> store, const std::string& prefix, int rank,
                  const std::vector<transport::PeerInfo>& peers, const WatchSettings& settings);
  // Writes the trace (SMDDP_TRACE) to <tracePath>.<communicator>.<rank>.json.
  ~CollectiveWatch();

  // Caller's thread, in sequence order: records the call at `now`.
  // `call` is the posted collective's Signature, which the poster keeps per shape. Returns the
  // collective's index among this communicator's collectives (CollectiveDesc::watchIndex).
  uint64_t posted(uint64_t seq, const Signature& call, std::chrono::steady_clock::time_point now);
  // Engine: the collective starts at `now`. Throws a failure already learnt from the peers.
  void started(const algo::CollectiveDesc& desc, std::chrono::steady_clock::time_point now);
  // Engine: the collective ended (error == nullptr: success). A failure this rank found itself
  // is announced to the peers; a timeout, peer failure or mismatch is dumped when configured.
  void finished(const algo::CollectiveDesc& desc, const Error* error);

  const algo::ExecMonitor* monitor() const { return beacon_.get(); }
  const FlightRecorder& recorder() const { return recorder_; }
  // The straggler detector's report (smddp/straggler.h); enabled == false when it is off.
  StragglerReport stragglerReport() const;
  // The dump's text (header, peers' beacons, recorder).
  std::string dumpText(const std::string& error) const;
  // Writes dumpText to <dumpPath>.<rank>; returns that path, or "" when it could not.
  std::string writeDump(const std::string& error) const;

 private:
  int rank_;
  int size_;
  std::string host_;
  WatchSettings settings_;
  std::chrono::steady_clock::time_point origin_;
  FlightRecorder recorder_;
  std::string prefix_;
  std::unique_ptr<TraceRecorder> trace_;          // null: no SMDDP_TRACE
  std::unique_ptr<StragglerSamples> samples_;     // null: no straggler detection
  std::unique_ptr<StragglerExchange> straggler_;  // reads samples_ on the beacon's thread
  std::unique_ptr<ProgressBeacon> beacon_;        // after the above: it reads them until joined
  bool dumped_ = false;                     // engine thread only
};

}  // namespace smddp::watch
