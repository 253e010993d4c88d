// SPDX-License-Identifier: Apache-2.0
// TraceRecorder (SMDDP_TRACE): a communicator's last N collectives with precise times, written as
// a Chrome / Perfetto trace (the Trace Event Format's JSON) when the communicator closes. Per
// rank one process: track "calls" marks when the application called each collective, track
// "runs" spans each from its start to its end, with its algorithm, the path its data took
// (arena: the host's shared memory; network; hierarchical: both; nccl; local) and its size.
// python/torch_smddp/timeline.py draws the ranks' traces as one picture.
// Invariants: the memory is fixed at creation (N entries); recording takes no lock and
// allocates nothing: posted() calls do not overlap one another, started()/ended() calls do not
// either, and each entry is stamped with its sequence number so a late start or end of a
// collective the ring moved past is dropped. json() runs when no collective is in flight.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "watch/signature.h"

namespace smddp::watch {

class TraceRecorder {
 public:
  explicit TraceRecorder(size_t capacity);
  ~TraceRecorder();

  void posted(uint64_t seq, const Signature& sig, int64_t nowNs);
  void started(uint64_t seq, int64_t nowNs);
  void ended(uint64_t seq, int64_t nowNs, bool failed);

  struct Identity {
    int rank = 0;
    int size = 1;
    std::string host;
    std::string communicator;
  };
  std::string json(const Identity& who) const;
  // Writes json() to `path`; returns false (and says nothing) when it cannot.
  bool write(const std::string& path, const Identity& who) const;

 private:
  struct Entry;
  Entry* entryOf(uint64_t seq) const;
  size_t capacity_;
  std::unique_ptr<Entry[]> entries_;
  uint64_t posted_ = 0;  // poster only; read by json()
};

// "arena", "hierarchical", "network", "nccl" or "local": where an algorithm moves the data.
const char* dataPath(const char* algorithm);

}  // namespace smddp::watch
