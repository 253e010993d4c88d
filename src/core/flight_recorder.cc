// FlightRecorder (see flight_recorder.h). One line per collective in the dump:
//   #12  all_reduce(float32, 1024, sum) [ring]  failed  queued +3.1 ms  ran 30000.2 ms  error: ...
#include "core/flight_recorder.h"

#include <algorithm>
#include <cstdio>
#include <thread>

namespace smddp::core {
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

FlightRecorder::FlightRecorder(size_t capacity)
    : slots_(new Slot[capacity == 0 ? 1 : capacity]), capacity_(capacity == 0 ? 1 : capacity) {}

FlightRecorder::Hold::Hold(const Slot& s) : slot_(s) {
  // The holder may have been preempted (ranks sharing cores): yield rather than spin it out.
  while (slot_.held.exchange(true, std::memory_order_acquire)) {
    for (int spins = 0; slot_.held.load(std::memory_order_relaxed); ++spins) {
      if (spins >= 64) std::this_thread::yield();
    }
  }
}

FlightRecorder::Hold::~Hold() { slot_.held.store(false, std::memory_order_release); }

FlightRecorder::Slot& FlightRecorder::slotFor(uint64_t seq) const { return slots_[seq % capacity_]; }

FlightEntry* FlightRecorder::match(Slot& s, uint64_t seq) {
  FlightEntry& e = s.entry;
  return e.state != FlightState::kEmpty && e.seq == seq ? &e : nullptr;
}

void FlightRecorder::posted(uint64_t seq, const Signature& sig, Clock::time_point now) {
  Slot& s = slotFor(seq);
  {
    Hold hold(s);
    FlightEntry& e = s.entry;
    e.seq = seq;
    e.sig = sig;
    e.state = FlightState::kQueued;
    e.enqueued = now;
    e.started = e.ended = Clock::time_point();
    e.error.clear();  // keeps its capacity: no allocation
  }
  uint64_t seen = recorded_.load(std::memory_order_relaxed);
  while (seq + 1 > seen && !recorded_.compare_exchange_weak(seen, seq + 1)) {
  }
}

void FlightRecorder::started(uint64_t seq, Clock::time_point now) {
  Slot& s = slotFor(seq);
  Hold hold(s);
  if (FlightEntry* e = match(s, seq)) {
    e->state = FlightState::kRunning;
    e->started = std::max(now, e->enqueued);  // a coarse `now` may lag the precise post time
  }
}

void FlightRecorder::ended(uint64_t seq, const char* error, Clock::time_point now) {
  Slot& s = slotFor(seq);
  Hold hold(s);
  if (FlightEntry* e = match(s, seq)) {
    if (e->started == Clock::time_point()) e->started = std::max(now, e->enqueued);
    e->ended = std::max(now, e->started);
    e->state = error == nullptr ? FlightState::kDone : FlightState::kFailed;
    if (error != nullptr) e->error = error;  // failures only: may allocate
  }
}

std::optional<FlightEntry> FlightRecorder::find(uint64_t seq) const {
  Slot& s = slotFor(seq);
  Hold hold(s);
  const FlightEntry* e = match(s, seq);
  if (e == nullptr) return std::nullopt;
  return *e;
}

std::vector<FlightEntry> FlightRecorder::snapshot() const {
  std::vector<FlightEntry> out;
  const uint64_t recorded = recorded_.load();
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

}  // namespace smddp::core
