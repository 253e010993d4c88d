// SPDX-License-Identifier: Apache-2.0
// StragglerTally (see straggler_analysis.h). For each collective k of a window that every rank
// completed, with the same kind, and that waits for every rank:
//   offset[r]   = median over the window of end[r][k] - end[0][k]  (the ends are one moment)
//   arrival'[r] = arrival[r][k] - offset[r]                       (on rank 0's clock)
//   late[r]     = arrival'[r] - median arrival'                    (after the median rank)
//   own[r]      = arrival[r][k] - its previous event: the previous call's arrival, or its end
//                 when that came before this call (time spent outside communication)
// The last rank arrives late in k when late > threshold and own - median own > threshold.
// Medians are lower medians (of 2 ranks the earlier), so one late rank of two is late by the
// whole gap.
#include "watch/straggler_analysis.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace smddp::watch {
namespace {

int64_t lowerMedian(std::vector<int64_t> v) {
  const auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

constexpr double kNsPerMs = 1e6;
constexpr size_t kMaxHostText = 256;

}  // namespace

bool synchronizing(CollectiveKind kind) {
  return kind == CollectiveKind::kAllReduce || kind == CollectiveKind::kAllGather ||
         kind == CollectiveKind::kReduceScatter || kind == CollectiveKind::kAllToAll ||
         kind == CollectiveKind::kAllToAllV || kind == CollectiveKind::kBarrier;
}

StragglerTally::StragglerTally(std::vector<std::string> hosts, std::chrono::nanoseconds threshold)
    : hosts_(std::move(hosts)), thresholdNs_(threshold.count()), ranks_(hosts_.size()) {}

size_t StragglerTally::bucketOf(int64_t ns) {
  if (ns < 1000) return 0;
  const double b = 1 + std::floor(4 * std::log2(static_cast<double>(ns) / 1000.0));
  return std::min(kBuckets - 1, static_cast<size_t>(b));
}

double StragglerTally::bucketTopMs(size_t bucket) {
  return bucket == 0 ? 0.001 : std::exp2(static_cast<double>(bucket) / 4) / 1000.0;
}

double StragglerTally::p99Ms(const PerRank& p) const {
  if (p.measured == 0) return 0;
  const uint64_t wanted = p.measured - p.measured / 100;  // the 99th of 100
  uint64_t seen = 0;
  for (size_t b = 0; b < kBuckets; ++b) {
    seen += p.histogram[b];
    if (seen >= wanted) return b == 0 ? 0 : bucketTopMs(b);
  }
  return bucketTopMs(kBuckets - 1);
}

StragglerVerdict StragglerTally::add(const StragglerWindow& w) {
  const size_t n = ranks_.size();
  StragglerVerdict v;
  v.lateArrivals.assign(n, 0);
  v.lateMs.assign(n, 0);
  v.kind.assign(n, CollectiveKind::kBarrier);
  if (n < 2 || w.size() != n || w[0].size() < 2) return v;
  const size_t len = w[0].size();
  for (const auto& r : w) {
    if (r.size() != len) return v;
  }
  // The comparable collectives.
  std::vector<size_t> ks;
  for (size_t k = 1; k < len; ++k) {
    bool ok = synchronizing(w[0][k].kind);
    for (size_t r = 0; ok && r < n; ++r) {
      ok = w[r][k].kind == w[0][k].kind && w[r][k].endNs > 0 && w[r][k].arrivalNs > 0 &&
           w[r][k - 1].arrivalNs > 0 && w[r][k].endNs >= w[r][k].arrivalNs;
    }
    if (ok) ks.push_back(k);
  }
  if (ks.empty()) return v;
  std::vector<int64_t> offset(n, 0);
  std::vector<int64_t> scratch(ks.size());
  for (size_t r = 1; r < n; ++r) {
    for (size_t i = 0; i < ks.size(); ++i) scratch[i] = w[r][ks[i]].endNs - w[0][ks[i]].endNs;
    offset[r] = lowerMedian(scratch);
  }
  std::vector<std::array<uint32_t, 16>> kindCount(n);
  std::vector<int64_t> arrival(n), own(n);
  for (size_t k : ks) {
    size_t last = 0;
    for (size_t r = 0; r < n; ++r) {
      const StragglerSample& prev = w[r][k - 1];
      const StragglerSample& cur = w[r][k];
      arrival[r] = cur.arrivalNs - offset[r];
      const int64_t prevEvent =
          prev.endNs > 0 && prev.endNs <= cur.arrivalNs ? prev.endNs : prev.arrivalNs;
      own[r] = cur.arrivalNs - prevEvent;
      if (arrival[r] > arrival[last]) last = r;
    }
    const int64_t median = lowerMedian(arrival);
    const int64_t medianOwn = lowerMedian(own);
    for (size_t r = 0; r < n; ++r) {
      const int64_t late = std::max<int64_t>(0, arrival[r] - median);
      PerRank& p = ranks_[r];
      ++p.measured;
      p.sumLateMs += static_cast<double>(late) / kNsPerMs;
      ++p.histogram[bucketOf(late)];
    }
    const int64_t late = arrival[last] - median;
    if (late > thresholdNs_ && own[last] - medianOwn > thresholdNs_) {
      ++v.lateArrivals[last];
      v.lateMs[last] += static_cast<double>(late) / kNsPerMs;
      const auto kind = static_cast<size_t>(w[last][k].kind) & 15;
      ++kindCount[last][kind];
      ranks_[last].kinds |= 1u << kind;
      ++ranks_[last].lateArrivals;
    }
  }
  v.compared = ks.size();
  ++windows_;
  compared_ += v.compared;
  named_.clear();
  for (size_t r = 0; r < n; ++r) {
    if (v.lateArrivals[r] > 0) {
      v.lateMs[r] /= static_cast<double>(v.lateArrivals[r]);
      const auto best = std::max_element(kindCount[r].begin(), kindCount[r].end());
      v.kind[r] = static_cast<CollectiveKind>(best - kindCount[r].begin());
    }
    const bool named = v.compared >= kMinCompared && 2 * v.lateArrivals[r] > v.compared;
    ranks_[r].named = named;
    if (named) {
      ++ranks_[r].namedWindows;
      v.named.push_back(static_cast<int>(r));
      named_.push_back(static_cast<int>(r));
    }
  }
  return v;
}

StragglerReport StragglerTally::report(size_t maxRanks) const {
  StragglerReport out;
  out.enabled = true;
  out.thresholdMs = static_cast<double>(thresholdNs_) / kNsPerMs;
  out.windows = windows_;
  out.collectives = compared_;
  out.named = named_;
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const PerRank& p = ranks_[r];
    StragglerRank s;
    s.rank = static_cast<int>(r);
    s.host = hosts_[r];
    s.measured = p.measured;
    s.lateArrivals = p.lateArrivals;
    s.meanLatenessMs = p.measured > 0 ? p.sumLateMs / static_cast<double>(p.measured) : 0;
    s.p99LatenessMs = p99Ms(p);
    s.named = p.named;
    s.namedWindows = p.namedWindows;
    for (size_t k = 0; k < 16; ++k) {
      if ((p.kinds >> k & 1u) != 0)
        s.collectives.emplace_back(toString(static_cast<CollectiveKind>(k)));
    }
    out.ranks.push_back(std::move(s));
  }
  std::stable_sort(out.ranks.begin(), out.ranks.end(), [](const auto& a, const auto& b) {
    if (a.named != b.named) return a.named;
    if (a.lateArrivals != b.lateArrivals) return a.lateArrivals > b.lateArrivals;
    return a.meanLatenessMs > b.meanLatenessMs;
  });
  if (out.ranks.size() > maxRanks) out.ranks.resize(maxRanks);
  return out;
}

std::string StragglerTally::warning(int rank, const StragglerVerdict& v) const {
  const auto r = static_cast<size_t>(rank);
  std::ostringstream s;
  s.precision(3);
  s << "straggler: rank " << rank;
  if (!hosts_[r].empty()) s << " (" << hosts_[r] << ")";
  s << " arrived " << v.lateMs[r] << " ms after the median in " << v.lateArrivals[r]
    << " of the last " << v.compared << " " << toString(v.kind[r]) << " calls";
  return s.str();
}

std::string encodeReport(const StragglerReport& report) {
  std::ostringstream s;
  s.precision(6);
  s << "straggler-report 1\n"
    << report.enabled << ' ' << report.thresholdMs << ' ' << report.windows << ' '
    << report.collectives << '\n'
    << report.named.size();
  for (int r : report.named) s << ' ' << r;
  s << '\n';
  for (const auto& r : report.ranks) {
    std::string kinds;
    for (const auto& k : r.collectives) kinds += (kinds.empty() ? "" : ",") + k;
    s << r.rank << ' ' << r.measured << ' ' << r.lateArrivals << ' ' << r.meanLatenessMs << ' '
      << r.p99LatenessMs << ' ' << r.named << ' ' << r.namedWindows << ' '
      << (kinds.empty() ? "-" : kinds) << ' ' << (r.host.empty() ? "-" : r.host) << '\n';
  }
  return s.str();
}

StragglerReport decodeReport(const std::string& text) {
  constexpr size_t kMaxRanks = 4096;
  std::istringstream s(text);
  std::string magic;
  int version = 0;
  StragglerReport out;
  size_t named = 0;
  if (!(s >> magic >> version) || magic != "straggler-report" || version != 1) return {};
  if (!(s >> out.enabled >> out.thresholdMs >> out.windows >> out.collectives >> named) ||
      named > kMaxRanks) {
    return {};
  }
  for (size_t i = 0; i < named; ++i) {
    int r = 0;
    if (!(s >> r)) return {};
    out.named.push_back(r);
  }
  StragglerRank r;
  std::string kinds;
  while (out.ranks.size() < kMaxRanks && s >> r.rank >> r.measured >> r.lateArrivals >>
                                             r.meanLatenessMs >> r.p99LatenessMs >> r.named >>
                                             r.namedWindows >> kinds >> r.host) {
    if (r.host.size() > kMaxHostText || kinds.size() > kMaxHostText) return {};
    r.collectives.clear();
    std::istringstream k(kinds == "-" ? "" : kinds);
    for (std::string one; std::getline(k, one, ',');) r.collectives.push_back(one);
    if (r.host == "-") r.host.clear();
    out.ranks.push_back(r);
  }
  return out;
}

}  // namespace smddp::watch
