// FlightRecorder: the last N collectives of one communicator (seq, signature, enqueue / start /
// end times, state, error), kept in a fixed ring so that a timeout or a peer failure can be
// explained after the fact (SMDDP_DUMP_ON_TIMEOUT) and so the progress beacon can publish what
// this rank called at each recent sequence number.
// Invariants: recording allocates nothing (entries are preallocated; the error text is only
// written on failure); entry i holds collective seq with seq % capacity == i; every method is
// safe from any thread (one short mutex: the caller thread posts, the engine thread runs).
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/mismatch.h"

namespace smddp::core {

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
  explicit FlightRecorder(size_t capacity = kDefaultCapacity);

  void posted(uint64_t seq, const Signature& sig);
  void started(uint64_t seq);
  // error == nullptr: done; else failed with that text.
  void ended(uint64_t seq, const char* error);

  size_t capacity() const { return entries_.size(); }
  // The entry of seq if it is still in the ring.
  std::optional<FlightEntry> find(uint64_t seq) const;
  // Every recorded entry, oldest first (at most capacity()).
  std::vector<FlightEntry> snapshot() const;
  // A readable table, one line per entry, times relative to `origin` in milliseconds.
  std::string format(std::chrono::steady_clock::time_point origin) const;

 private:
  FlightEntry* slot(uint64_t seq);  // the entry of seq, or nullptr once overwritten

  mutable std::mutex mutex_;
  std::vector<FlightEntry> entries_;
  uint64_t recorded_ = 0;  // number of posted() calls: entries [recorded_ - capacity, recorded_)
};

}  // namespace smddp::core
