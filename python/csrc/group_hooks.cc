// SPDX-License-Identifier: Apache-2.0
// GroupHooks: see group_hooks.h.
#include "group_hooks.h"

#include <c10/util/Exception.h>

#include <exception>
#include <vector>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

// A hook that throws is reported and skipped: the others still run, and the collective's own
// outcome is not changed by it.
template <class Fn>
void runGuarded(const char* what, int rank, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    TORCH_WARN(errorHead(rank), ": a ", what, " hook threw: ", e.what());
  } catch (...) {
    TORCH_WARN(errorHead(rank), ": a ", what, " hook threw");
  }
}

template <class Map>
std::vector<typename Map::mapped_type> copyOf(std::mutex& mutex, const Map& map) {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<typename Map::mapped_type> out;
  out.reserve(map.size());
  for (const auto& [id, fn] : map) out.push_back(fn);
  return out;
}

}  // namespace

uint64_t nextCompletionKey() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void GroupHooks::addAbort(int64_t id, compat::AbortHook hook) {
  TORCH_CHECK(hook, "smddp: register_abort_hook(", id, "): the hook is empty");
  std::lock_guard<std::mutex> lock(mutex_);
  abort_[id] = std::move(hook);
}

void GroupHooks::removeAbort(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  abort_.erase(id);
}

void GroupHooks::addCompletion(int64_t id, compat::CompletionHook hook) {
  TORCH_CHECK(hook, "smddp: register_completion_hook(", id, "): the hook is empty");
  std::lock_guard<std::mutex> lock(mutex_);
  completion_[id] = std::move(hook);
  recount();
}

void GroupHooks::removeCompletion(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  completion_.erase(id);
  recount();
}

void GroupHooks::addListener(int64_t id, Listener listener) {
  TORCH_CHECK(listener, "smddp: add_completion_listener(", id, "): the listener is empty");
  std::lock_guard<std::mutex> lock(mutex_);
  listeners_[id] = std::move(listener);
  recount();
}

void GroupHooks::removeListener(int64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  listeners_.erase(id);
  recount();
}

void GroupHooks::recount() {
  completionCount_.store(completion_.size() + listeners_.size(), std::memory_order_release);
}

void GroupHooks::runAbort(int rank) const {
  for (const auto& hook : copyOf(mutex_, abort_)) runGuarded("abort", rank, hook);
}

void GroupHooks::runCompletion(const CompletionRecord& record) const {
  if (!wantsCompletion()) return;
  if (record.ok) {
    compat::CompletionHookArgs args;
    args.completionKey = record.key;
    args.duration_ms = record.durationMs;
    for (const auto& hook : copyOf(mutex_, completion_)) {
      runGuarded("completion", -1, [&] { hook(args); });
    }
  }
  for (const auto& listener : copyOf(mutex_, listeners_)) {
    runGuarded("completion listener", -1, [&] { listener(record); });
  }
}

}  // namespace smddp::torch_shim
