// SPDX-License-Identifier: Apache-2.0
// FlightRecorder (see flight_recorder.h). One line per collective in the dump:
//   #12  all_reduce(float32, 1024, sum) [ring]  failed  queued +3.1 ms  ran 30000.2 ms  error: ...
#include "watch/flight_recorder.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <thread>

namespace smddp::watch {
namespace {

using Clock = FlightRecorder::Clock;

std::string msSince(Clock::time_point from, Clock::time_point to) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f",
                std::chrono::duration<double, std::milli>(to - from).count());
  return buf;
}

}  // namespace

const char* toString(FlightState state) {
  switch (state) {
    case FlightState::kEmpty: return "empty";
    case FlightState::kQueued: return "queued";
    case FlightState::kRunning: return "running";
    case FlightState::kDone: return "done";
    case FlightState::kFailed: return "failed";
  }
  return "unknown";
}

// One ring entry. Every field is a relaxed atomic (readers may race with the single writer of
// each half); the stamps order them, seqlock-style: a writer marks the stamp kWriting, writes, then
// stores its new stamp with release; a reader loads the stamp (acquire), the fields, then the stamp
// again after an acquire fence, and keeps the fields only if it did not change.
struct FlightRecorder::Cell {
  using Rep = Clock::rep;
  // Post half: posted() only.
  std::atomic<uint64_t> postStamp{0};
  std::atomic<CollectiveKind> kind{CollectiveKind::kBarrier};
  std::atomic<DataType> dtype{DataType::kUInt8};
  std::atomic<size_t> count{0};
  std::atomic<ReduceOp> op{ReduceOp::kSum};
  std::atomic<int> root{-1};
  std::atomic<const char*> algorithm{nullptr};
  std::atomic<Rep> enqueued{0};
  // Run half: started() / ended() only.
  std::atomic<uint64_t> runStamp{0};
  std::atomic<FlightState> state{FlightState::kEmpty};
  std::atomic<Rep> started{0};
  std::atomic<Rep> ended{0};
  // The error text of a failed collective (failures only).
  mutable std::mutex errorMutex;
  uint64_t errorSeq = 0;
  std::string error;
};

namespace {

constexpr auto kRelaxed = std::memory_order_relaxed;
constexpr int kReadAttempts = 64;

Clock::rep repOf(Clock::time_point t) { return t.time_since_epoch().count(); }
Clock::time_point timeOf(Clock::rep r) { return Clock::time_point(Clock::duration(r)); }

// A stamp: 0 never written, kWriting being written, else what the half describes. The post half
// is stamped seq + 1; the run half 2(seq + 1) once started and 2(seq + 1) + 1 once ended, so a
// reader whose two loads straddle a whole write sees different stamps and retries.
constexpr uint64_t kWriting = ~uint64_t{0};
uint64_t postStampOf(uint64_t seq) { return seq + 1; }
uint64_t runStampOf(uint64_t seq, bool ended) { return 2 * (seq + 1) + (ended ? 1 : 0); }
bool runIsOf(uint64_t runStamp, uint64_t seq) {
  return runStamp != kWriting && runStamp / 2 == seq + 1;
}

// Opens a half for writing; close() publishes it with `stamp`.
void open(std::atomic<uint64_t>& stamp) {
  stamp.store(kWriting, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
}
void close(std::atomic<uint64_t>& stamp, uint64_t value) {
  stamp.store(value, std::memory_order_release);
}

// Capacities are powers of two, so finding a cell is a mask, not a division (three per
// collective on its hot path).
size_t roundUpToPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

}  // namespace

FlightRecorder::FlightRecorder(size_t capacity)
    : capacity_(roundUpToPowerOfTwo(capacity)), cells_(new Cell[capacity_]) {}

FlightRecorder::~FlightRecorder() = default;

FlightRecorder::Cell& FlightRecorder::cellFor(uint64_t seq) const {
  return cells_[seq & (capacity_ - 1)];
}

void FlightRecorder::posted(uint64_t seq, const Signature& sig, Clock::time_point now) {
  Cell& s = cellFor(seq);
  open(s.postStamp);
  s.kind.store(sig.kind, kRelaxed);
  s.dtype.store(sig.dtype, kRelaxed);
  s.count.store(sig.count, kRelaxed);
  s.op.store(sig.op, kRelaxed);
  s.root.store(sig.root, kRelaxed);
  s.algorithm.store(sig.algorithm, kRelaxed);
  s.enqueued.store(repOf(now), kRelaxed);
  close(s.postStamp, postStampOf(seq));
  if (seq + 1 > recorded_.load(kRelaxed)) recorded_.store(seq + 1, std::memory_order_release);
}

void FlightRecorder::started(uint64_t seq, Clock::time_point now) {
  Cell& s = cellFor(seq);
  if (s.postStamp.load(std::memory_order_acquire) != postStampOf(seq)) return;  // overwritten
  open(s.runStamp);
  s.state.store(FlightState::kRunning, kRelaxed);
  s.started.store(std::max(repOf(now), s.enqueued.load(kRelaxed)), kRelaxed);
  s.ended.store(0, kRelaxed);
  close(s.runStamp, runStampOf(seq, false));
}

void FlightRecorder::ended(uint64_t seq, const char* error, Clock::time_point now) {
  Cell& s = cellFor(seq);
  if (s.postStamp.load(std::memory_order_acquire) != postStampOf(seq)) return;
  if (error != nullptr) {
    std::lock_guard<std::mutex> lock(s.errorMutex);
    s.errorSeq = seq;
    s.error = error;  // may allocate: failures only
  }
  const bool ran = runIsOf(s.runStamp.load(kRelaxed), seq);
  open(s.runStamp);
  const auto started = ran ? s.started.load(kRelaxed)
                           : std::max(repOf(now), s.enqueued.load(kRelaxed));
  s.started.store(started, kRelaxed);
  s.ended.store(std::max(repOf(now), started), kRelaxed);
  s.state.store(error == nullptr ? FlightState::kDone : FlightState::kFailed, kRelaxed);
  close(s.runStamp, runStampOf(seq, true));
}

std::optional<FlightEntry> FlightRecorder::find(uint64_t seq) const {
  const Cell& s = cellFor(seq);
  for (int attempt = 0; attempt < kReadAttempts; ++attempt) {
    const uint64_t post = s.postStamp.load(std::memory_order_acquire);
    if (post != kWriting && post != postStampOf(seq)) return std::nullopt;  // empty or another's
    FlightEntry e;
    e.seq = seq;
    e.sig.kind = s.kind.load(kRelaxed);
    e.sig.dtype = s.dtype.load(kRelaxed);
    e.sig.count = s.count.load(kRelaxed);
    e.sig.op = s.op.load(kRelaxed);
    e.sig.root = s.root.load(kRelaxed);
    e.sig.algorithm = s.algorithm.load(kRelaxed);
    e.enqueued = timeOf(s.enqueued.load(kRelaxed));
    const uint64_t run = s.runStamp.load(std::memory_order_acquire);
    e.state = s.state.load(kRelaxed);
    e.started = timeOf(s.started.load(kRelaxed));
    e.ended = timeOf(s.ended.load(kRelaxed));
    std::atomic_thread_fence(std::memory_order_acquire);
    if (post == kWriting || run == kWriting || s.postStamp.load(kRelaxed) != post ||
        s.runStamp.load(kRelaxed) != run) {
      std::this_thread::yield();
      continue;  // a writer was in between
    }
    if (!runIsOf(run, seq)) {  // the run half describes no run of this collective yet: queued
      e.state = FlightState::kQueued;
      e.started = e.ended = Clock::time_point();
    }
    if (e.state == FlightState::kFailed) {
      std::lock_guard<std::mutex> lock(s.errorMutex);
      if (s.errorSeq == seq) e.error = s.error;
    }
    return e;
  }
  return std::nullopt;  // written continuously while we looked: report it as not there
}

std::vector<FlightEntry> FlightRecorder::snapshot() const {
  std::vector<FlightEntry> out;
  const uint64_t recorded = recorded_.load(std::memory_order_acquire);
  const uint64_t first = recorded > capacity_ ? recorded - capacity_ : 0;
  for (uint64_t seq = first; seq < recorded; ++seq) {
    if (auto e = find(seq)) out.push_back(std::move(*e));
  }
  return out;
}

std::string FlightRecorder::format(Clock::time_point origin) const {
  std::string out;
  for (const FlightEntry& e : snapshot()) {
    out += "#" + std::to_string(e.seq) + "  " + signatureWithAlgorithm(e.sig) + "  " +
           toString(e.state) + "  posted at " + msSince(origin, e.enqueued) + " ms";
    if (e.started != Clock::time_point()) {
      out += ", started after " + msSince(e.enqueued, e.started) + " ms";
    }
    if (e.ended != Clock::time_point()) out += ", ran " + msSince(e.started, e.ended) + " ms";
    if (e.state == FlightState::kFailed) out += "\n    error: " + e.error;
    out += "\n";
  }
  return out;
}

}  // namespace smddp::watch
