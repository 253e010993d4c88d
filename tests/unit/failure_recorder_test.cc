// SPDX-License-Identifier: Apache-2.0
// Unit tests of the failure-explaining pieces: the flight recorder ring (wraparound, concurrent
// writers, dump format), the progress beacon's text encoding, and collective signatures (hash
// stability, sensitivity, mismatch wording).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

#include "common/tag.h"
#include "watch/flight_recorder.h"
#include "watch/progress_beacon.h"
#include "watch/signature.h"

namespace smddp::watch {
namespace {

Signature allReduceSig(size_t count, DataType t = DataType::kFloat32) {
  return Signature(Call::of(CollectiveKind::kAllReduce, t, count, ReduceOp::kSum), "ring");
}

TEST(FlightRecorder, KeepsTheLastCapacityEntriesAcrossWraparound) {
  FlightRecorder rec(8);
  for (uint64_t seq = 0; seq < 21; ++seq) {
    rec.posted(seq, allReduceSig(seq + 1));
    rec.started(seq);
    rec.ended(seq, seq == 19 ? "boom" : nullptr);
  }
  const auto snap = rec.snapshot();
  ASSERT_EQ(snap.size(), 8u);
  for (size_t i = 0; i < snap.size(); ++i) {
    EXPECT_EQ(snap[i].seq, 13 + i) << "entry " << i;
    EXPECT_EQ(snap[i].sig.count, 14 + i) << "entry " << i;
  }
  EXPECT_FALSE(rec.find(12).has_value()) << "overwritten entries are gone";
  ASSERT_TRUE(rec.find(19).has_value());
  EXPECT_EQ(rec.find(19)->state, FlightState::kFailed);
  EXPECT_EQ(rec.find(19)->error, "boom");
  ASSERT_TRUE(rec.find(20).has_value());
  EXPECT_EQ(rec.find(20)->state, FlightState::kDone);
  EXPECT_TRUE(rec.find(20)->error.empty()) << "a reused entry forgets the old error";
  rec.started(5);  // a stale seq must not touch the entry that replaced it
  ASSERT_TRUE(rec.find(13).has_value());
  EXPECT_EQ(rec.find(13)->state, FlightState::kDone);
}

TEST(FlightRecorder, RoundsItsCapacityUpToAPowerOfTwo) {
  EXPECT_EQ(FlightRecorder(0).capacity(), 1u);
  EXPECT_EQ(FlightRecorder(1).capacity(), 1u);
  FlightRecorder rec(5);
  ASSERT_EQ(rec.capacity(), 8u);
  for (uint64_t seq = 0; seq < 11; ++seq) rec.posted(seq, allReduceSig(seq + 1));
  const auto snap = rec.snapshot();
  ASSERT_EQ(snap.size(), 8u);
  for (size_t i = 0; i < snap.size(); ++i) EXPECT_EQ(snap[i].seq, 3 + i) << "entry " << i;
  EXPECT_FALSE(rec.find(2).has_value());
  ASSERT_TRUE(rec.find(10).has_value());
  EXPECT_EQ(rec.find(10)->sig.count, 11u);
}

TEST(FlightRecorder, ConcurrentPostersAndRunnersLeaveConsistentEntries) {
  FlightRecorder rec(64);
  constexpr uint64_t kPerThread = 5000;
  std::thread poster([&] {
    for (uint64_t s = 0; s < kPerThread; ++s) rec.posted(s, allReduceSig(s));
  });
  std::thread runner([&] {
    for (uint64_t s = 0; s < kPerThread; ++s) {
      rec.started(s);
      rec.ended(s, nullptr);
    }
  });
  std::thread reader([&] {
    for (int i = 0; i < 200; ++i) {
      for (const auto& e : rec.snapshot()) {
        ASSERT_EQ(e.sig.count, e.seq) << "torn entry";
        const bool hasEnd = e.ended != std::chrono::steady_clock::time_point();
        const bool hasStart = e.started != std::chrono::steady_clock::time_point();
        if (e.state == FlightState::kQueued) {
          ASSERT_FALSE(hasStart || hasEnd) << "#" << e.seq;
        }
        if (e.state == FlightState::kRunning) {
          ASSERT_TRUE(hasStart && !hasEnd) << "#" << e.seq;
        }
        if (e.state == FlightState::kDone) {
          ASSERT_TRUE(hasStart && hasEnd && e.ended >= e.started) << "#" << e.seq;
        }
      }
    }
  });
  poster.join();
  runner.join();
  reader.join();
  const auto snap = rec.snapshot();
  ASSERT_EQ(snap.size(), 64u);
  EXPECT_EQ(snap.back().seq, kPerThread - 1);
}

TEST(FlightRecorder, FormatsOneReadableLinePerCollective) {
  FlightRecorder rec(4);
  const auto origin = std::chrono::steady_clock::now();
  rec.posted(0, allReduceSig(1024));
  rec.started(0);
  rec.ended(0, nullptr);
  rec.posted(1, Signature(Call::of(CollectiveKind::kBroadcast, DataType::kFloat16, 512,
                                   ReduceOp::kSum, 1),
                          "binomial"));
  rec.started(1);
  rec.ended(1, "timed out");
  rec.posted(2, allReduceSig(8));
  const std::string text = rec.format(origin);
  EXPECT_NE(text.find("#0  all_reduce(float32, 1024, sum) [ring]  done  posted at "),
            std::string::npos) << text;
  EXPECT_NE(text.find("#1  broadcast(float16, 512, root=1) [binomial]  failed"),
            std::string::npos) << text;
  EXPECT_NE(text.find("\n    error: timed out\n"), std::string::npos) << text;
  EXPECT_NE(text.find("#2  all_reduce(float32, 8, sum) [ring]  queued"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("#2  all_reduce(float32, 8, sum) [ring]  queued  posted at 0.0 ms, ran"),
            std::string::npos) << "a queued entry has no run time: " << text;
}

TEST(ProgressRecord, EncodesAndDecodesABeacon) {
  PeerProgress p;
  p.present = true;
  p.heartbeat = 42;
  p.called = 17;
  p.completed = 16;
  p.recent = {{15, "barrier() [dissemination]"}, {16, "all_reduce(float32, 4, sum) [ring]"}};
  const PeerProgress q = PeerProgress::decode(p.encode() + "future-field 7\n");
  EXPECT_TRUE(q.present);
  EXPECT_EQ(q.heartbeat, 42u);
  EXPECT_EQ(q.called, 17u);
  EXPECT_EQ(q.completed, 16u);
  ASSERT_NE(q.signatureAt(16), nullptr);
  EXPECT_EQ(*q.signatureAt(16), "all_reduce(float32, 4, sum) [ring]");
  EXPECT_EQ(q.signatureAt(3), nullptr);
  EXPECT_FALSE(PeerProgress::decode("garbage").present);
}

TEST(Signature, HashIsStableAndSeesEveryField) {
  const uint16_t base = signatureHash(allReduceSig(1024));
  EXPECT_EQ(base, signatureHash(allReduceSig(1024)));
  EXPECT_LE(base, tag::kSigMask);
  EXPECT_NE(base, signatureHash(allReduceSig(1023)));
  EXPECT_NE(base, signatureHash(allReduceSig(1024, DataType::kInt32)));
  Signature other = allReduceSig(1024);
  other.op = ReduceOp::kMax;
  EXPECT_NE(base, signatureHash(other));
  other = allReduceSig(1024);
  other.algorithm = "recursive_doubling";
  EXPECT_NE(base, signatureHash(other));
}

TEST(Signature, MismatchTextNamesBothCalls) {
  EXPECT_EQ(mismatchText(0, "all_reduce(float32, 1024, sum) [ring]", 3,
                         "broadcast(float16, 512, root=1) [binomial]"),
            "rank 0 called all_reduce(float32, 1024, sum) but rank 3 called "
            "broadcast(float16, 512, root=1)");
  EXPECT_EQ(mismatchText(1, "all_reduce(float32, 8, sum) [ring]", 2,
                         "all_reduce(float32, 8, sum) [recursive_doubling]"),
            "rank 1 called all_reduce(float32, 8, sum) [ring] but rank 2 called "
            "all_reduce(float32, 8, sum) [recursive_doubling]");
}

// A beacon value written by someone else: a port that is no port, and more signatures (and
// longer ones) than any beacon sends, are cut to what a beacon may hold.
TEST(Beacon, ForgedBeaconsAreBounded) {
  std::string forged = "hb 3\nport 99999999\n";
  for (int i = 0; i < 100000; ++i) forged += "sig " + std::to_string(i) + " x\n";
  forged += "sig 5 " + std::string(1 << 20, 'y') + "\n";
  const PeerProgress p = PeerProgress::decode(forged);
  EXPECT_TRUE(p.present);
  EXPECT_EQ(p.port, 0);
  EXPECT_EQ(p.recent.size(), PeerProgress::kMaxRecent);
  EXPECT_EQ(PeerProgress::decode("hb 1\nport -5\n").port, 0);
  EXPECT_EQ(PeerProgress::decode("hb 1\nport 65535\n").port, 65535);
}

}  // namespace
}  // namespace smddp::watch
