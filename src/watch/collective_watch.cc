// SPDX-License-Identifier: Apache-2.0
// CollectiveWatch (see collective_watch.h). The dump is plain text meant for a person reading it
// after a hang: who failed and why, what each peer's beacon said at that moment, and the last
// collectives of this rank with their timing.
#include "watch/collective_watch.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <fstream>

#include "common/clock.h"
#include "common/logging.h"

namespace smddp::watch {

CollectiveWatch::CollectiveWatch(std::shared_ptr<Store> store, const std::string& prefix, int rank,
                                 const std::vector<transport::PeerInfo>& peers,
                                 const WatchSettings& settings)
    : rank_(rank),
      size_(static_cast<int>(peers.size())),
      host_(static_cast<size_t>(rank) < peers.size() ? peers[static_cast<size_t>(rank)].host : ""),
      settings_(settings),
      origin_(std::chrono::steady_clock::now()),
      prefix_(prefix) {
  if (!settings.tracePath.empty()) trace_ = std::make_unique<TraceRecorder>(settings.traceCalls);
  if (store == nullptr || settings.beaconPeriod.count() <= 0 || peers.size() < 2) return;
  std::vector<std::string> hosts;
  std::vector<std::string> addresses;
  for (const auto& p : peers) {
    hosts.push_back(p.host);
    addresses.push_back(p.ip);
  }
  if (settings.stragglerThreshold.count() > 0) {
    samples_ = std::make_unique<StragglerSamples>();
    straggler_ = std::make_unique<StragglerExchange>(
        store, prefix, rank, hosts, *samples_, settings.stragglerThreshold,
        std::clamp(settings.beaconPeriod, std::chrono::milliseconds(50),
                   std::chrono::milliseconds(1000)));
  }
  BeaconSettings bs;
  bs.straggler = straggler_.get();
  bs.period = settings.beaconPeriod;
  bs.heartbeatTimeout = settings.heartbeatTimeout;
  bs.checkMismatch = settings.checkMismatch;
  beacon_ = std::make_unique<ProgressBeacon>(std::move(store), prefix, rank, std::move(hosts),
                                             std::move(addresses), recorder_, bs);
}

namespace {
int64_t preciseNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

CollectiveWatch::~CollectiveWatch() {
  if (!trace_) return;
  std::string name;
  for (char c : prefix_.empty() ? std::string("smddp") : prefix_) {
    name += std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' ? c : '_';
  }
  const std::string path = settings_.tracePath + "." + name + "." + std::to_string(rank_) + ".json";
  if (trace_->write(path, {rank_, size_, host_, prefix_})) {
    SMDDP_INFO(rank_, "trace written to " << path);
  } else {
    SMDDP_WARN(rank_, "cannot write the trace to " << path);
  }
}

uint64_t CollectiveWatch::posted(uint64_t seq, const Signature& call,
                                 std::chrono::steady_clock::time_point now) {
  recorder_.posted(seq, call, now);
  if (beacon_) beacon_->noteCalled(seq);
  if (!samples_ && !trace_) return 0;
  const int64_t t = preciseNs();
  if (trace_) trace_->posted(seq, call, t);
  return samples_ ? samples_->arrived(call.kind, t) : 0;
}

StragglerReport CollectiveWatch::stragglerReport() const {
  return straggler_ && beacon_ ? straggler_->report() : StragglerReport{};
}

void CollectiveWatch::started(const algo::CollectiveDesc& desc,
                              std::chrono::steady_clock::time_point now) {
  recorder_.started(desc.seq, now);
  if (trace_) trace_->started(desc.seq, preciseNs());
  if (beacon_ && beacon_->failed()) beacon_->raise(desc);
}

void CollectiveWatch::finished(const algo::CollectiveDesc& desc, const Error* error) {
  recorder_.ended(desc.seq, error != nullptr ? error->what() : nullptr, coarseNow());
  if (samples_ || trace_) {
    const int64_t t = preciseNs();
    if (samples_) samples_->ended(desc.watchIndex, t, error != nullptr);
    if (trace_) trace_->ended(desc.seq, t, error != nullptr);
  }
  if (beacon_) beacon_->noteCompleted(desc.seq);
  if (error == nullptr) return;
  const ErrorCode code = error->code();
  const bool explainable = code == ErrorCode::kTimeout || code == ErrorCode::kPeerFailure ||
                           code == ErrorCode::kMismatch;
  if (beacon_ && (explainable || code == ErrorCode::kTransport || code == ErrorCode::kInternal)) {
    beacon_->publishFailure(code, error->what());
  }
  if (explainable && !settings_.dumpPath.empty() && !dumped_) {
    dumped_ = true;
    const std::string path = writeDump(error->what());
    if (!path.empty()) SMDDP_WARN(rank_, "flight recorder written to " << path);
  }
}

std::string CollectiveWatch::dumpText(const std::string& error) const {
  char when[64] = {0};
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  std::string out = "smddp flight recorder: rank " + std::to_string(rank_) + " of " +
                    std::to_string(size_) + " (" + host_ + ", pid " + std::to_string(::getpid()) +
                    "), " + when + "\nerror: " + error + "\n\n-- progress beacons, read now --\n";
  out += beacon_ ? beacon_->peersText() : std::string("(no beacon: no store or SMDDP_BEACON_MS=0)\n");
  out += "\n-- last " + std::to_string(recorder_.capacity()) +
         " collectives of this rank (ms since the communicator was created) --\n";
  out += recorder_.format(origin_);
  return out;
}

std::string CollectiveWatch::writeDump(const std::string& error) const {
  const std::string path = settings_.dumpPath + "." + std::to_string(rank_);
  std::ofstream out(path, std::ios::trunc);
  if (!out) {
    SMDDP_WARN(rank_, "cannot write the flight recorder to " << path);
    return "";
  }
  out << dumpText(error);
  return out.good() ? path : "";
}

}  // namespace smddp::watch
