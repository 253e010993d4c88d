// SPDX-License-Identifier: Apache-2.0
// StragglerExchange (see straggler_exchange.h).
#include "watch/straggler_exchange.h"

#include <algorithm>
#include <sstream>

#include "common/logging.h"

namespace smddp::watch {
namespace {

using Clock = std::chrono::steady_clock;
// A rank named again within this long is not warned about again (the report keeps counting).
constexpr std::chrono::seconds kWarnEvery{60};

// An answer's samples, checked: `count + 1` lines of "arrival end kind", else false.
bool parseSamples(const std::string& text, uint64_t count, std::vector<StragglerSample>& out) {
  std::istringstream s(text);
  out.clear();
  StragglerSample x;
  int kind = 0;
  while (out.size() <= count && s >> x.arrivalNs >> x.endNs >> kind) {
    if (kind < 0 || kind > 15) return false;
    x.kind = static_cast<CollectiveKind>(kind);
    out.push_back(x);
  }
  return out.size() == count + 1;
}

}  // namespace

StragglerExchange::StragglerExchange(std::shared_ptr<Store> store, std::string prefix, int rank,
                                     std::vector<std::string> hosts,
                                     const StragglerSamples& samples,
                                     std::chrono::nanoseconds threshold,
                                     std::chrono::milliseconds readTimeout)
    : store_(std::move(store)),
      prefix_(std::move(prefix)),
      rank_(rank),
      size_(static_cast<int>(hosts.size())),
      samples_(samples),
      readTimeout_(readTimeout),
      tally_(std::move(hosts), threshold) {
  report_.enabled = true;
  report_.thresholdMs = static_cast<double>(threshold.count()) / 1e6;
}

StragglerReport StragglerExchange::report() const {
  std::lock_guard<std::mutex> lock(reportMutex_);
  return report_;
}

void StragglerExchange::step() {
  if (rank_ == 0) {
    detect();
  } else {
    respond();
  }
}

std::string StragglerExchange::samplesText(uint64_t first, uint64_t count, bool& pending) const {
  pending = false;
  std::string out;
  out.reserve((count + 1) * 40);
  StragglerSample x;
  for (uint64_t i = first - 1; i < first + count; ++i) {
    switch (samples_.read(i, x)) {
      case StragglerSamples::Read::kPending:
        pending = true;
        return "";
      case StragglerSamples::Read::kGone:
        return "gone";
      case StragglerSamples::Read::kOk:
        break;
    }
    out += std::to_string(x.arrivalNs) + ' ' + std::to_string(x.endNs) + ' ' +
           std::to_string(static_cast<int>(x.kind)) + '\n';
  }
  return out;
}

void StragglerExchange::respond() {
  const auto round = static_cast<uint64_t>(store_->add(key("round"), 0));
  if (round <= answered_) return;
  if (round != requestId_) {
    const std::string request = store_->get(key("request"), readTimeout_);
    std::istringstream s(request);
    uint64_t id = 0, first = 0, count = 0;
    if (!(s >> id >> first >> count) || id != round || first == 0 || count > kMaxWindow) {
      SMDDP_WARN(rank_, "straggler detector: ignored a malformed request ("
                            << request.size() << " bytes) under " << key("request"));
      answered_ = round;
      return;
    }
    requestId_ = id;
    first_ = first;
    count_ = count;
    const size_t body = request.find('\n');
    StragglerReport published =
        decodeReport(body == std::string::npos ? "" : request.substr(body + 1));
    std::lock_guard<std::mutex> lock(reportMutex_);
    if (published.enabled) report_ = std::move(published);
  }
  bool pending = false;
  const std::string text = samplesText(first_, count_, pending);
  if (pending) return;  // its collectives have not all ended here yet: next period
  store_->set(key("samples/" + std::to_string(rank_)), std::to_string(requestId_) + "\n" + text);
  store_->add(key("answers"), 1);
  answered_ = requestId_;
}

bool StragglerExchange::collect(StragglerWindow& window) {
  const int64_t answers = store_->add(key("answers"), 0);
  if (answers < static_cast<int64_t>(requestId_) * (size_ - 1)) return false;
  bool pending = false;
  window.assign(static_cast<size_t>(size_), {});
  const std::string mine = samplesText(first_, count_, pending);
  if (pending) return false;
  parseSamples(mine, count_, window[0]);
  for (int r = 1; r < size_; ++r) {
    const std::string answer = store_->get(key("samples/" + std::to_string(r)), readTimeout_);
    const size_t nl = answer.find('\n');
    if (nl == std::string::npos || answer.compare(0, nl, std::to_string(requestId_)) != 0) {
      continue;  // stale or malformed: the window is unusable for this rank
    }
    parseSamples(answer.substr(nl + 1), count_, window[static_cast<size_t>(r)]);
  }
  return true;
}

void StragglerExchange::detect() {
  if (requestId_ != 0) {
    StragglerWindow window;
    if (!collect(window)) return;
    const StragglerVerdict v = tally_.add(window);
    const auto now = Clock::now();
    for (int r : v.named) {
      auto it = warned_.find(r);
      if (it != warned_.end() && now - it->second < kWarnEvery) continue;
      warned_[r] = now;
      SMDDP_WARN(rank_, tally_.warning(r, v));
    }
    {
      std::lock_guard<std::mutex> lock(reportMutex_);
      report_ = tally_.report(static_cast<size_t>(size_));
    }
    nextFirst_ = first_ + count_;
  }
  // The next window: what this rank completed since the last one, once there is enough.
  const uint64_t done = samples_.arrivals();
  if (done < nextFirst_ + kMinWindow) {
    requestId_ = 0;
    return;
  }
  first_ = std::max(nextFirst_, done > kMaxWindow ? done - kMaxWindow : 0);  // nextFirst_ >= 1
  count_ = done - first_;
  requestId_ = ++rounds_;
  StragglerReport published = tally_.report(kPublishedRanks);
  store_->set(key("request"), std::to_string(requestId_) + " " + std::to_string(first_) + " " +
                                  std::to_string(count_) + "\n" + encodeReport(published));
  store_->add(key("round"), 1);
}

}  // namespace smddp::watch
