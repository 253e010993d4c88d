// SPDX-License-Identifier: Apache-2.0
// The straggler detector's arithmetic (watch/straggler_analysis.h) and its sample ring
// (watch/straggler_samples.h), on windows built by hand: a rank that sleeps before each call is
// named whatever its clock's offset, and no other; a rank late only because its calls queue
// behind a long collective is not; jitter below the threshold names nobody over 10,000
// collectives; incomplete or inconsistent windows change nothing; the report survives its
// encoding and garbage decodes to nothing.
#include <gtest/gtest.h>

#include <random>

#include "watch/straggler_analysis.h"
#include "watch/straggler_samples.h"

namespace smddp::watch {
namespace {

constexpr int64_t kMs = 1000000;

// A window of `count` all_reduce calls (plus the one before) on `n` ranks: each iteration every
// rank computes `work` ns, rank `slow` (if any) `extra` ns more, then calls; the collective ends
// 50 us after the last arrival. Rank r's clock reads true time + r * 1e12 + r * 37 ms.
StragglerWindow synchronousWindow(int n, size_t count, int slow, int64_t extra, int64_t work,
                                  std::mt19937* jitter = nullptr, int64_t jitterNs = 0) {
  StragglerWindow w(static_cast<size_t>(n));
  int64_t t = 1000 * kMs;
  std::uniform_int_distribution<int64_t> d(0, jitterNs);
  for (size_t k = 0; k <= count; ++k) {
    std::vector<int64_t> arrival(static_cast<size_t>(n));
    int64_t last = 0;
    for (int r = 0; r < n; ++r) {
      arrival[r] = t + work + (r == slow ? extra : 0) + (jitter != nullptr ? d(*jitter) : 0);
      last = std::max(last, arrival[r]);
    }
    const int64_t end = last + 50000;
    for (int r = 0; r < n; ++r) {
      const int64_t skew = r * 1000000000000 + r * 37 * kMs;
      w[r].push_back({arrival[r] + skew, end + skew, CollectiveKind::kAllReduce});
    }
    t = end;
  }
  return w;
}

std::vector<std::string> hosts(int n) {
  std::vector<std::string> h;
  for (int r = 0; r < n; ++r) h.push_back("host" + std::to_string(r / 2));
  return h;
}

TEST(StragglerTally, NamesTheRankThatSleepsWhateverItsClock) {
  for (int n : {2, 3, 5, 7}) {
    const int slow = n - 1 - n / 3;
    StragglerTally t(hosts(n), std::chrono::milliseconds(2));
    const StragglerVerdict v = t.add(synchronousWindow(n, 32, slow, 10 * kMs, 100000));
    EXPECT_EQ(v.compared, 32u);
    ASSERT_EQ(v.named, std::vector<int>{slow}) << n << " ranks";
    EXPECT_EQ(v.lateArrivals[slow], 32u);
    EXPECT_NEAR(v.lateMs[slow], 10.0, 0.01);
    EXPECT_EQ(t.warning(slow, v), "straggler: rank " + std::to_string(slow) + " (host" +
                                      std::to_string(slow / 2) +
                                      ") arrived 10 ms after the median in 32 of the last 32 "
                                      "all_reduce calls");
    const StragglerReport rep = t.report(64);
    ASSERT_EQ(rep.ranks.size(), static_cast<size_t>(n));
    EXPECT_EQ(rep.ranks[0].rank, slow);
    EXPECT_TRUE(rep.ranks[0].named);
    EXPECT_EQ(rep.ranks[0].namedWindows, 1u);
    EXPECT_EQ(rep.ranks[0].collectives, std::vector<std::string>{"all_reduce"});
    EXPECT_NEAR(rep.ranks[0].meanLatenessMs, 10.0, 0.01);
    EXPECT_GE(rep.ranks[0].p99LatenessMs, 10.0);
    EXPECT_LE(rep.ranks[0].p99LatenessMs, 12.0);
    for (size_t i = 1; i < rep.ranks.size(); ++i) {
      EXPECT_FALSE(rep.ranks[i].named);
      EXPECT_EQ(rep.ranks[i].lateArrivals, 0u);
      EXPECT_LT(rep.ranks[i].meanLatenessMs, 0.01);
    }
  }
}

TEST(StragglerTally, MostOfTheWindowIsNeeded) {
  StragglerTally t(hosts(3), std::chrono::milliseconds(2));
  StragglerWindow w = synchronousWindow(3, 32, 1, 10 * kMs, 100000);
  StragglerWindow quiet = synchronousWindow(3, 32, -1, 0, 100000);
  // Late in 16 of 32 (not more than half): not named; in 17: named.
  for (size_t k = 17; k <= 32; ++k) {
    for (size_t r = 0; r < 3; ++r) w[r][k] = quiet[r][k];
  }
  EXPECT_TRUE(t.add(w).named.empty());
  w = synchronousWindow(3, 32, 1, 10 * kMs, 100000);
  for (size_t k = 18; k <= 32; ++k) {
    for (size_t r = 0; r < 3; ++r) w[r][k] = quiet[r][k];
  }
  EXPECT_EQ(t.add(w).named, std::vector<int>{1});
  EXPECT_EQ(t.report(8).windows, 2u);
  EXPECT_EQ(t.report(8).collectives, 64u);
}

TEST(StragglerTally, ARankLateOnlyBecauseItsCallsQueuedIsNotNamed) {
  // Every rank posts a call each millisecond without waiting (asynchronous), each call ends
  // 30 ms after it was posted; rank 2 started 5 ms after the others and stays 5 ms behind, but
  // it spends no more time outside communication than they do.
  const int n = 3;
  StragglerWindow w(n);
  for (size_t k = 0; k <= 40; ++k) {
    const int64_t t = 1000 * kMs + static_cast<int64_t>(k) * kMs;
    for (int r = 0; r < n; ++r) {
      const int64_t arrival = t + (r == 2 ? 5 * kMs : 0);
      w[r].push_back({arrival, t + 35 * kMs, CollectiveKind::kAllReduce});
    }
  }
  StragglerTally t(hosts(n), std::chrono::milliseconds(2));
  const StragglerVerdict v = t.add(w);
  EXPECT_EQ(v.compared, 40u);
  EXPECT_TRUE(v.named.empty());
  EXPECT_EQ(v.lateArrivals[2], 0u);
  const StragglerReport rep = t.report(8);
  EXPECT_TRUE(rep.named.empty());
  for (const auto& r : rep.ranks) {  // late it was, and the report says so
    if (r.rank == 2) {
      EXPECT_NEAR(r.meanLatenessMs, 5.0, 0.01);
    }
  }
}

TEST(StragglerTally, JitterNamesNobodyOverTenThousandCollectives) {
  std::mt19937 rng(7);
  for (int n : {2, 5}) {
    StragglerTally t(hosts(n), std::chrono::milliseconds(2));
    for (int window = 0; window < 40; ++window) {
      EXPECT_TRUE(t.add(synchronousWindow(n, 256, -1, 0, 100000, &rng, 1900000)).named.empty());
    }
    const StragglerReport rep = t.report(8);
    EXPECT_EQ(rep.collectives, 40u * 256);
    for (const auto& r : rep.ranks) EXPECT_EQ(r.namedWindows, 0u);
  }
}

TEST(StragglerTally, IncompleteOrInconsistentWindowsChangeNothing) {
  StragglerTally t(hosts(3), std::chrono::milliseconds(2));
  StragglerWindow lost = synchronousWindow(3, 32, 1, 10 * kMs, 100000);
  lost[2].clear();  // rank 2's ring moved past them
  EXPECT_EQ(t.add(lost).compared, 0u);
  StragglerWindow failed = synchronousWindow(3, 8, 1, 10 * kMs, 100000);
  for (auto& s : failed[0]) s.endNs = -1;  // every call failed on rank 0
  EXPECT_EQ(t.add(failed).compared, 0u);
  StragglerWindow other = synchronousWindow(3, 8, 1, 10 * kMs, 100000);
  for (auto& s : other[1]) s.kind = CollectiveKind::kAllGather;  // the ranks disagree
  EXPECT_EQ(t.add(other).compared, 0u);
  StragglerWindow rooted = synchronousWindow(3, 8, 1, 10 * kMs, 100000);
  for (auto& r : rooted) {
    for (auto& s : r) s.kind = CollectiveKind::kBroadcast;  // a root need not wait for anyone
  }
  EXPECT_EQ(t.add(rooted).compared, 0u);
  EXPECT_EQ(t.report(8).windows, 0u);
  EXPECT_TRUE(t.add(synchronousWindow(3, 7, 1, 10 * kMs, 100000)).named.empty());  // too few
}

TEST(StragglerReportText, RoundTripsAndRefusesGarbage) {
  StragglerTally t(hosts(5), std::chrono::milliseconds(3));
  t.add(synchronousWindow(5, 32, 4, 10 * kMs, 100000));
  const StragglerReport a = t.report(64);
  const StragglerReport b = decodeReport(encodeReport(a));
  EXPECT_TRUE(b.enabled);
  EXPECT_EQ(b.thresholdMs, 3.0);
  EXPECT_EQ(b.windows, 1u);
  EXPECT_EQ(b.collectives, 32u);
  EXPECT_EQ(b.named, std::vector<int>{4});
  ASSERT_EQ(b.ranks.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(b.ranks[i].rank, a.ranks[i].rank);
    EXPECT_EQ(b.ranks[i].host, a.ranks[i].host);
    EXPECT_EQ(b.ranks[i].lateArrivals, a.ranks[i].lateArrivals);
    EXPECT_EQ(b.ranks[i].named, a.ranks[i].named);
    EXPECT_EQ(b.ranks[i].namedWindows, a.ranks[i].namedWindows);
    EXPECT_EQ(b.ranks[i].collectives, a.ranks[i].collectives);
    EXPECT_NEAR(b.ranks[i].meanLatenessMs, a.ranks[i].meanLatenessMs, 1e-3);
  }
  for (const char* garbage : {"", "straggler-report 2\n1 2 3 4\n0\n", "hello",
                              "straggler-report 1\n1 2 3 4\n99999999\n"}) {
    EXPECT_FALSE(decodeReport(garbage).enabled) << garbage;
  }
}

TEST(StragglerSamples, KeepsTheLastCapacityCallsAndTheirEnds) {
  StragglerSamples s;
  StragglerSample x;
  EXPECT_EQ(s.read(0, x), StragglerSamples::Read::kPending);
  EXPECT_EQ(s.arrived(CollectiveKind::kAllReduce, 100), 0u);
  EXPECT_EQ(s.read(0, x), StragglerSamples::Read::kPending);  // not ended
  s.ended(0, 250, false);
  ASSERT_EQ(s.read(0, x), StragglerSamples::Read::kOk);
  EXPECT_EQ(x.arrivalNs, 100);
  EXPECT_EQ(x.endNs, 250);
  EXPECT_EQ(x.kind, CollectiveKind::kAllReduce);
  EXPECT_EQ(s.arrived(CollectiveKind::kBarrier, 300), 1u);
  s.ended(1, 400, true);
  ASSERT_EQ(s.read(1, x), StragglerSamples::Read::kOk);
  EXPECT_EQ(x.endNs, -1);  // failed
  for (uint64_t i = 2; i < StragglerSamples::kCapacity + 1; ++i) {
    s.ended(s.arrived(CollectiveKind::kAllGather, 1000 + static_cast<int64_t>(i)), 5000, false);
  }
  EXPECT_EQ(s.read(0, x), StragglerSamples::Read::kGone);
  ASSERT_EQ(s.read(1, x), StragglerSamples::Read::kOk);
  s.ended(0, 9999, false);  // a late end of a call the ring moved past changes nothing
  ASSERT_EQ(s.read(StragglerSamples::kCapacity, x), StragglerSamples::Read::kOk);
  EXPECT_EQ(x.endNs, 5000);
  EXPECT_EQ(x.kind, CollectiveKind::kAllGather);
}

}  // namespace
}  // namespace smddp::watch
