// SPDX-License-Identifier: Apache-2.0
// FlightRecorder: the last N collectives of one communicator (seq, signature, enqueue / start /
// end times, state, error), kept in a fixed ring so that a timeout or a peer failure can be
// explained after the fact (SMDDP_DUMP_ON_TIMEOUT) and so the progress beacon can publish what
// this rank called at each recent sequence number.
// Invariants: recording allocates nothing (entries are preallocated; the error text is only
// written on failure); entry i holds collective seq with seq % capacity == i; readers are safe
// from any thread. Writers take no lock (but for a failure's error text) and no atomic
// read-modify-write (the hot path of every collective): posted() calls must not overlap one
// another (the engine's lock orders them), nor may started()/ended() calls (one runner at a
// time). Each entry is two seqlock-style halves, each with a single writer: the post half (seq,
// signature, post time) and the run half (state, start and end times), each stamped with a value
// unique to the write (kWriting while it is being written); readers retry a half whose stamp
// changed under them and use the run half only when it describes the posted seq. Callers pass
// the time they already read; start and end times may come from the coarse clock
// (common/clock.h), so they are kept no earlier than the post and start times.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "watch/signature.h"

namespace smddp::watch {

enum class FlightState : uint8_t { kEmpty, kQueued, kRunning, kDone, kFailed };
const char* toString(FlightState state);

struct FlightEntry {
  uint64_t seq = 0;
  Signature sig;
  FlightState state = FlightState::kEmpty;
  std::chrono::steady_clock::time_point enqueued, started, ended;
  std::string error;  // first line of the error when state == kFailed
};

class FlightRecorder {
 public:
  static constexpr size_t kDefaultCapacity = 256;
  // capacity is rounded up to a power of two (at least 1).
  explicit FlightRecorder(size_t capacity = kDefaultCapacity);
  ~FlightRecorder();

  using Clock = std::chrono::steady_clock;
  void posted(uint64_t seq, const Signature& sig, Clock::time_point now = Clock::now());
  void started(uint64_t seq, Clock::time_point now = Clock::now());
  // error == nullptr: done; else failed with that text.
  void ended(uint64_t seq, const char* error, Clock::time_point now = Clock::now());

  size_t capacity() const { return capacity_; }
  // The entry of seq if it is still in the ring.
  std::optional<FlightEntry> find(uint64_t seq) const;
  // Every recorded entry, oldest first (at most capacity()).
  std::vector<FlightEntry> snapshot() const;
  // A readable table, one line per entry, times relative to `origin` in milliseconds.
  std::string format(std::chrono::steady_clock::time_point origin) const;

 private:
  struct Cell;
  Cell& cellFor(uint64_t seq) const;

  size_t capacity_;  // a power of two
  std::unique_ptr<Cell[]> cells_;
  // Highest posted seq + 1: entries [recorded_ - capacity, recorded_) may be live.
  std::atomic<uint64_t> recorded_{0};
};

}  // namespace smddp::watch
