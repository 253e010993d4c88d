// SPDX-License-Identifier: Apache-2.0
// Loopback harness for the algorithm tests: one thread per rank over one LoopbackFabric, each rank
// with its own ExecResources (as a communicator has), plus exact typed values for closed-form
// expectations. Small integers (and halves) are exact in every dtype we test, float16 and bfloat16
// included, so results can be compared with ==.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "algorithms/arena/arena.h"
#include "algorithms/arena/segment.h"
#include "algorithms/collective.h"
#include "algorithms/exec.h"
#include "algorithms/registry.h"
#include "transport/transport.h"

namespace smddp::algo::testing {

constexpr DataType kAllDataTypes[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                                      DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                                      DataType::kInt32,    DataType::kInt64};
constexpr ReduceOp kAllOps[] = {ReduceOp::kSum, ReduceOp::kProd, ReduceOp::kMin, ReduceOp::kMax,
                                ReduceOp::kAvg};
constexpr size_t kTinySegment = 64;  // forces multi-segment paths on small buffers

bool isSigned(DataType dtype);
// Compact text of a test value ("3", "-0.5", "1.30577e+36" for garbage).
std::string show(double value);

// Exact element access for small integer / half-integer values.
void setValue(DataType dtype, void* buffer, size_t index, double value);
double getValue(DataType dtype, const void* buffer, size_t index);

// A typed buffer with a guard zone after it; fill() writes a sentinel everywhere.
class TestBuffer {
 public:
  TestBuffer(DataType dtype, size_t count);
  void* data() { return bytes_.data(); }
  DataType dtype() const { return dtype_; }
  size_t count() const { return count_; }
  void set(size_t i, double v) { setValue(dtype_, bytes_.data(), i, v); }
  double get(size_t i) const { return getValue(dtype_, bytes_.data(), i); }
  void poison();  // sentinel bytes in the data, for catching elements nobody wrote
  bool guardIntact() const;

 private:
  DataType dtype_;
  size_t count_;
  std::vector<unsigned char> bytes_;
};

// What each rank body reports: failures are collected, not thrown, so one rank's wrong data does
// not hang the others.
struct RankContext {
  int rank;
  int size;
  transport::Transport& transport;
  ExecResources& resources;
  arena::Arena* arena;  // this rank's arena over the group's heap segment (4 KiB slots)
  uint64_t seq = 0;
  std::vector<std::string> failures;
  // runRanksOnHosts: this rank's host groups (their settings follow each run's) and host arena.
  HostGroups* hosts = nullptr;
  arena::Arena* hostArena = nullptr;

  // Runs one algorithm as the core would (next sequence number, deadline now + 30 s).
  void run(const Algorithm& algorithm, const CollectiveArgs& args, size_t segmentBytes);
  void fail(const std::string& message);
};

using RankBody = std::function<void(RankContext&)>;

// Runs body on n threads, with a shared heap arena of 4 KiB slots (the arena algorithms chunk by
// min(slot, segment), so every multi-KiB case runs several chunks); reports every rank's failures
// and exceptions through gtest.
void runRanks(int n, const RankBody& body);
// Runs body on hosts x perHost threads laid out as ranks of several hosts: rank r on host
// r % hosts (so a host's ranks are not consecutive), or r / perHost when `consecutive` (as
// launchers number them), a heap arena per host, no arena over all ranks, and each rank's
// HostGroups (exec.h) for the hierarchical algorithms; 4 KiB arena slots unless slotBytes says
// otherwise.
void runRanksOnHosts(int hosts, int perHost, const RankBody& body, size_t slotBytes = 4096,
                     bool consecutive = false);
// The same with rank r on host hostOf[r] (hosts may hold different numbers of ranks).
void runRanksOnUnevenHosts(const std::vector<int>& hostOf, const RankBody& body,
                           size_t slotBytes = 4096);

const Algorithm& algorithm(CollectiveKind kind, const char* name);
std::string describeCase(const Algorithm& a, int n, size_t count, DataType dtype, ReduceOp op,
                         bool inPlace, size_t segmentBytes);

}  // namespace smddp::algo::testing
