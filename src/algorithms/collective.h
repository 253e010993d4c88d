// What an algorithm is asked to do: one collective's arguments, already validated by the core,
// and its description for error messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/tag.h"
#include "smddp/types.h"

namespace smddp::algo {

struct CollectiveArgs {
  CollectiveKind kind = CollectiveKind::kBarrier;
  // all_reduce: count elements in, count out. broadcast: count elements (send read on root only).
  // all_gather: count elements per rank in send; blocks[r] receives rank r's count elements.
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  DataType dtype = DataType::kUInt8;
  ReduceOp op = ReduceOp::kSum;
  int root = 0;
  std::vector<void*> blocks;  // all_gather only: one destination per rank

  size_t elementSize() const { return dataTypeSize(dtype); }
  size_t bytes() const { return count * elementSize(); }
  bool inPlace() const { return send == recv; }
};

// Identity of one collective for messages: "all_reduce #17 (float32 x 1024 = 4 KiB, sum)".
struct CollectiveDesc {
  CollectiveKind kind = CollectiveKind::kBarrier;
  uint64_t seq = 0;
  DataType dtype = DataType::kUInt8;
  size_t count = 0;
  ReduceOp op = ReduceOp::kSum;
  int root = -1;
  const char* algorithm = nullptr;  // the registry's static name; nullptr when run locally
  // Hash of (kind, dtype, count, op, root, algorithm) that goes into the tags (core/mismatch.h);
  // 0 when mismatch checks are off.
  uint16_t signature = 0;

  std::string describe() const;
};

std::string formatBytes(size_t bytes);

}  // namespace smddp::algo
