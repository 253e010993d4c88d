// SPDX-License-Identifier: Apache-2.0
// What an algorithm is asked to do: one collective's arguments, already validated by the core,
// and its description for error messages. Both are a Call (common/call.h) plus what they add.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/call.h"
#include "smddp/types.h"

namespace smddp::algo {

// Which ranks of a communicator over several hosts (exec.h: HostGroups) take part in a call: all
// (every user call), the ranks of this rank's host, or its counterparts on the other hosts (the
// ranks of its local index). The core's device path across hosts posts the last two as the host
// steps of one call (planes/smddp/ipc_plan.h); scoped.h runs them.
enum class Scope : uint8_t { kAll, kHost, kCross };

struct CollectiveArgs : Call {
  // all_reduce: count elements in, count out. broadcast: count elements (send read on root only).
  // all_gather: count elements per rank in send; block(r) receives rank r's count elements.
  // gather: the same on the root only. scatter: the root's sendBlock(r) goes to rank r's recv.
  const void* send = nullptr;
  void* recv = nullptr;
  // A list of per-rank buffers instead of one buffer of size() blocks: the outputs of all_gather
  // and gather (block(r)), the inputs of scatter (sendBlock(r)). One pointer per rank (copied:
  // the caller's list need not outlive the call). Empty for one buffer, whose block r is at
  // r * bytes().
  std::vector<void*> blocks;
  // all_to_allv: the 2 x size() pieces, send pieces 0..n-1 then recv pieces 0..n-1, as pointers
  // in `blocks` and element counts here (send piece r goes to rank r, recv piece q comes from
  // rank q). Empty otherwise; all_to_all's pieces are the blocks of send and recv.
  std::vector<size_t> counts;
  // Where the buffers live (core/validate: one kind per call). kCuda calls are staged through
  // host memory by the core before any algorithm sees them: algorithms get host memory only.
  MemoryType memory = MemoryType::kHost;
  int device = -1;          // the CUDA device of a kCuda call
  void* stream = nullptr;   // the stream of a kCuda call (Buffer::stream)
  Scope scope = Scope::kAll;

  CollectiveArgs() = default;
  CollectiveArgs(const Call& call, const void* sendBuf, void* recvBuf)
      : Call(call), send(sendBuf), recv(recvBuf) {}

  void* block(size_t r) const {
    return blocks.empty() ? static_cast<char*>(recv) + r * bytes() : blocks[r];
  }
  const void* sendBlock(size_t r) const {
    return blocks.empty() ? static_cast<const char*>(send) + r * bytes() : blocks[r];
  }
  bool inPlace() const { return send == recv; }

  // all_to_all and all_to_allv: what this rank sends to rank r, and receives from rank r.
  const void* sendPiece(size_t r) const { return counts.empty() ? sendBlock(r) : blocks[r]; }
  size_t sendPieceBytes(size_t r) const {
    return counts.empty() ? bytes() : counts[r] * elementSize();
  }
  void* recvPiece(size_t r) const {
    return counts.empty() ? block(r) : blocks[counts.size() / 2 + r];
  }
  size_t recvPieceBytes(size_t r) const {
    return counts.empty() ? bytes() : counts[counts.size() / 2 + r] * elementSize();
  }
};

// Identity of one collective for messages: "all_reduce #17 (float32 x 1024 = 4 KiB, sum)".
struct CollectiveDesc : Call {
  uint64_t seq = 0;
  // Its index among the communicator's collectives, point-to-point calls not counted: the same
  // on every rank (watch/straggler_samples.h).
  uint64_t watchIndex = 0;
  const char* algorithm = nullptr;  // the registry's static name; nullptr when run locally
  // shapeHash() of this collective, set when it is posted; the arena algorithms compare it across
  // ranks (always), and the tags carry a 12-bit fold of it (watch/signature.h).
  uint64_t shape = 0;
  // That fold, which goes into the tags; 0 when mismatch checks are off.
  uint16_t signature = 0;
  // The bound this collective runs under: the communicator's timeout when it was posted.
  std::chrono::milliseconds timeout{0};

  std::string describe() const;
};

std::string formatBytes(size_t bytes);

}  // namespace smddp::algo
