// SPDX-License-Identifier: Apache-2.0
// StragglerSamples (see straggler_samples.h).
#include "watch/straggler_samples.h"

namespace smddp::watch {
namespace {
constexpr uint64_t kWriting = ~uint64_t{0};
}  // namespace

struct StragglerSamples::Slot {
  std::atomic<uint64_t> stamp{kWriting};
  std::atomic<int64_t> arrival{0};
  std::atomic<int64_t> end{0};
  std::atomic<uint8_t> kind{0};
};

StragglerSamples::StragglerSamples() : slots_(new Slot[kCapacity]) {}
StragglerSamples::~StragglerSamples() = default;

uint64_t StragglerSamples::arrived(CollectiveKind kind, int64_t nowNs) {
  const uint64_t index = next_.load(std::memory_order_relaxed);
  Slot& s = slots_[index & (kCapacity - 1)];
  s.stamp.store(kWriting, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  s.arrival.store(nowNs, std::memory_order_relaxed);
  s.end.store(0, std::memory_order_relaxed);
  s.kind.store(static_cast<uint8_t>(kind), std::memory_order_relaxed);
  s.stamp.store(index, std::memory_order_release);
  next_.store(index + 1, std::memory_order_release);
  return index;
}

void StragglerSamples::ended(uint64_t index, int64_t nowNs, bool failed) {
  Slot& s = slots_[index & (kCapacity - 1)];
  if (s.stamp.load(std::memory_order_acquire) != index) return;  // overtaken: kCapacity in flight
  s.end.store(failed ? -1 : (nowNs > 0 ? nowNs : 1), std::memory_order_release);
}

StragglerSamples::Read StragglerSamples::read(uint64_t index, StragglerSample& out) const {
  if (index >= next_.load(std::memory_order_acquire)) return Read::kPending;
  const Slot& s = slots_[index & (kCapacity - 1)];
  const uint64_t before = s.stamp.load(std::memory_order_acquire);
  out.arrivalNs = s.arrival.load(std::memory_order_relaxed);
  out.endNs = s.end.load(std::memory_order_acquire);
  out.kind = static_cast<CollectiveKind>(s.kind.load(std::memory_order_relaxed));
  std::atomic_thread_fence(std::memory_order_acquire);
  const uint64_t after = s.stamp.load(std::memory_order_relaxed);
  if (before != index || after != index) return Read::kGone;  // rewritten by a later index
  return out.endNs == 0 ? Read::kPending : Read::kOk;
}

}  // namespace smddp::watch
