// FlightRecorder (see flight_recorder.h). One line per collective in the dump:
//   #12  all_reduce(float32, 1024, sum) [ring]  failed  queued +3.1 ms  ran 30000.2 ms  error: ...
#include "core/flight_recorder.h"

#include <cstdio>

namespace smddp::core {
namespace {

using Clock = std::chrono::steady_clock;

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

FlightRecorder::FlightRecorder(size_t capacity) : entries_(capacity == 0 ? 1 : capacity) {}

FlightEntry* FlightRecorder::slot(uint64_t seq) {
  FlightEntry& e = entries_[seq % entries_.size()];
  return e.state != FlightState::kEmpty && e.seq == seq ? &e : nullptr;
}

void FlightRecorder::posted(uint64_t seq, const Signature& sig) {
  std::lock_guard<std::mutex> lock(mutex_);
  FlightEntry& e = entries_[seq % entries_.size()];
  e.seq = seq;
  e.sig = sig;
  e.state = FlightState::kQueued;
  e.enqueued = Clock::now();
  e.started = e.ended = Clock::time_point();
  e.error.clear();  // keeps its capacity: no allocation
  if (seq + 1 > recorded_) recorded_ = seq + 1;
}

void FlightRecorder::started(uint64_t seq) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightEntry* e = slot(seq)) {
    e->state = FlightState::kRunning;
    e->started = Clock::now();
  }
}

void FlightRecorder::ended(uint64_t seq, const char* error) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (FlightEntry* e = slot(seq)) {
    if (e->started == Clock::time_point()) e->started = Clock::now();
    e->ended = Clock::now();
    e->state = error == nullptr ? FlightState::kDone : FlightState::kFailed;
    if (error != nullptr) e->error = error;
  }
}

std::optional<FlightEntry> FlightRecorder::find(uint64_t seq) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const FlightEntry* e = const_cast<FlightRecorder*>(this)->slot(seq);
  if (e == nullptr) return std::nullopt;
  return *e;
}

std::vector<FlightEntry> FlightRecorder::snapshot() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<FlightEntry> out;
  const uint64_t n = entries_.size();
  const uint64_t first = recorded_ > n ? recorded_ - n : 0;
  for (uint64_t seq = first; seq < recorded_; ++seq) {
    const FlightEntry& e = entries_[seq % n];
    if (e.state != FlightState::kEmpty && e.seq == seq) out.push_back(e);
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

}  // namespace smddp::core
