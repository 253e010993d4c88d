// SPDX-License-Identifier: Apache-2.0
// GroupHooks: what a ProcessGroupSmddp calls back when something happens to it.
//   abort hooks (torch's registerAbortHook): run once per communicator generation, when an error
//     first breaks it (a timeout, a lost or failed peer, a mismatch), on the thread that met the
//     error and before any waiter of the failed collective sees it; not for an abort() the
//     application asked for, nor for a reconfigure that replaces a healthy generation.
//   completion hooks (torch's registerCompletionHook, Hooks.hpp): once per Work that completed
//     successfully, with its completion key and duration; failed Works fire nothing.
//   completion listeners (smddp's own, from Python): once per Work, successful or not, with the
//     op, the engine's sequence number, the duration and the outcome.
// Both completion kinds run where the Work's completion is established (the group's completion
// thread, or a caller inside wait()), outside every smddp lock; they must be short and must not
// call into the group.
// Invariant: registration and the callbacks may run on different threads at once; a callback
// runs on a copy of the set taken under the lock, so a hook may unregister itself.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "torch_compat.h"

namespace smddp::torch_shim {

// One finished Work, as the listeners see it.
struct CompletionRecord {
  uint64_t key = 0;       // the Work's getCompletionKey()
  std::string op;         // torch's op name ("ALLREDUCE", ...)
  uint64_t sequence = 0;  // the engine's sequence number of its (last) collective
  std::optional<float> durationMs;
  bool ok = true;
  std::string error;  // the error's message when !ok
};

class GroupHooks {
 public:
  using Listener = std::function<void(const CompletionRecord&)>;

  void addAbort(int64_t id, compat::AbortHook hook);
  void removeAbort(int64_t id);
  void addCompletion(int64_t id, compat::CompletionHook hook);
  void removeCompletion(int64_t id);
  void addListener(int64_t id, Listener listener);
  void removeListener(int64_t id);

  // Whether Works must report their completion (arm themselves, stamp their duration).
  bool wantsCompletion() const { return completionCount_.load(std::memory_order_acquire) > 0; }

  void runAbort(int rank) const;
  void runCompletion(const CompletionRecord& record) const;

 private:
  void recount();  // mutex_ held

  mutable std::mutex mutex_;
  std::map<int64_t, compat::AbortHook> abort_;
  std::map<int64_t, compat::CompletionHook> completion_;
  std::map<int64_t, Listener> listeners_;
  std::atomic<size_t> completionCount_{0};  // completion_ + listeners_
};

// A fresh, never reused completion key (process-wide).
uint64_t nextCompletionKey();

}  // namespace smddp::torch_shim
