// SPDX-License-Identifier: Apache-2.0
// StragglerSamples: when this rank called each of its last kCapacity collectives and when each
// ended, on its own steady clock (nanoseconds), indexed by the collective's position among the
// communicator's collectives (the index every rank gives the same call: point-to-point calls,
// which only some ranks make, do not count). The progress beacon reads a window of them for the
// straggler detector (straggler_exchange.h).
// Invariants: recording allocates nothing and takes no lock: arrived() calls do not overlap one
// another (the poster's lock orders them) and ended() calls follow their arrived(). Each slot is
// a seqlock stamped with its index (kWriting while arrived() rewrites it); a reader keeps a slot
// only when the stamp is the index it wants before and after reading. The end is written once,
// after the arrival, and only while the stamp is still its index.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>

#include "common/call.h"

namespace smddp::watch {

struct StragglerSample {
  int64_t arrivalNs = 0;  // steady clock
  int64_t endNs = 0;      // 0: not ended yet; -1: failed
  CollectiveKind kind = CollectiveKind::kBarrier;
};

class StragglerSamples {
 public:
  static constexpr uint64_t kCapacity = 2048;  // a power of two
  StragglerSamples();
  ~StragglerSamples();

  // The poster: the next collective is called now; returns its index (the arrivals before it).
  uint64_t arrived(CollectiveKind kind, int64_t nowNs);
  // The runner: collective `index` ended now (failed: the sample is unusable).
  void ended(uint64_t index, int64_t nowNs, bool failed);
  uint64_t arrivals() const { return next_.load(std::memory_order_acquire); }

  enum class Read { kOk, kPending, kGone };
  // The sample of `index`: kOk with it, kPending when it has not ended (or not arrived) yet,
  // kGone when the ring has moved past it.
  Read read(uint64_t index, StragglerSample& out) const;

 private:
  struct Slot;
  std::unique_ptr<Slot[]> slots_;
  std::atomic<uint64_t> next_{0};
};

}  // namespace smddp::watch
