// FlightRecorder: the last N collectives of one communicator (seq, signature, enqueue / start /
// end times, state, error), kept in a fixed ring so that a timeout or a peer failure can be
// explained after the fact (SMDDP_DUMP_ON_TIMEOUT) and so the progress beacon can publish what
// this rank called at each recent sequence number.
// Invariants: recording allocates nothing (entries are preallocated; the error text is only
// written on failure); entry i holds collective seq with seq % capacity == i; every method is
// safe from any thread. Each entry has its own spin flag, held for a few stores: the caller
// thread posts, whoever runs the collective starts and ends it, the beacon thread reads, and
// they almost never touch one entry at once. Callers pass the time they already read (one clock
// read per event at most); start and end times may come from the coarse clock (common/clock.h),
// so they are kept no earlier than the post time and the start time.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
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
  struct Slot {
    mutable std::atomic<bool> held{false};
    FlightEntry entry;
  };
  // Holds one slot's flag for a scope (a few stores; contention is rare and brief).
  class Hold {
   public:
    explicit Hold(const Slot& s);
    ~Hold();
    Hold(const Hold&) = delete;
    Hold& operator=(const Hold&) = delete;

   private:
    const Slot& slot_;
  };
  Slot& slotFor(uint64_t seq) const;
  // The entry of seq (its slot held by the caller), or nullptr once overwritten.
  static FlightEntry* match(Slot& s, uint64_t seq);

  std::unique_ptr<Slot[]> slots_;
  size_t capacity_;
  // Highest posted seq + 1: entries [recorded_ - capacity, recorded_) may be live.
  std::atomic<uint64_t> recorded_{0};
};

}  // namespace smddp::core
