// SPDX-License-Identifier: Apache-2.0
// The pinned-block layout of CUDA calls (planes/smddp/staged_layout.h): segments partition the elements,
// every input byte is copied in once and every output byte out once, aliasing survives (in place
// stays in place, an in-place all_gather's input stays inside its output), and the block holds
// each merged range once.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "planes/smddp/staged_layout.h"
#include "smddp/error.h"

namespace smddp::planes {
namespace {

algo::CollectiveArgs call(CollectiveKind kind, size_t count, const void* send, void* recv,
                          int root = -1) {
  algo::CollectiveArgs a(Call::of(kind, DataType::kFloat32, count, ReduceOp::kSum, root), send,
                         recv);
  a.memory = MemoryType::kCuda;
  a.device = 0;
  return a;
}

// Bytes copied per device address, over all segments (each must be exactly once).
std::map<uintptr_t, int> coverage(const std::vector<StagedPiece> StagedSegment::*which,
                                  const StagedLayout& layout) {
  std::map<uintptr_t, int> seen;
  for (const StagedSegment& s : layout.segments) {
    for (const StagedPiece& p : s.*which) {
      for (size_t b = 0; b < p.bytes; ++b) ++seen[reinterpret_cast<uintptr_t>(p.device) + b];
    }
  }
  return seen;
}

TEST(StagedLayout, AllReduceSegmentsPartitionTheElements) {
  std::vector<float> send(1001), recv(1001);
  std::vector<char> block(1 << 16);
  const auto a = call(CollectiveKind::kAllReduce, 1001, send.data(), recv.data());
  const StagedLayout l = layoutStaged(a, 0, 3, 400, block.data());  // 100 floats per segment
  ASSERT_EQ(l.segments.size(), 11u);
  // The block holds the regions in address order: the staged send comes second when the heap put
  // recv below send (each region rounded to 64 bytes).
  const char* sendBase = block.data() + (send.data() < recv.data() ? 0 : (1001 * 4 + 63) / 64 * 64);
  size_t first = 0;
  for (const StagedSegment& s : l.segments) {
    EXPECT_EQ(s.host.memory, MemoryType::kHost);
    EXPECT_EQ(s.host.send, sendBase + first * 4);
    EXPECT_EQ(s.host.count, std::min<size_t>(100, 1001 - first));
    first += s.host.count;
  }
  EXPECT_EQ(first, 1001u);
  const auto in = coverage(&StagedSegment::in, l);
  const auto out = coverage(&StagedSegment::out, l);
  EXPECT_EQ(in.size(), 1001u * 4);
  EXPECT_EQ(out.size(), 1001u * 4);
  for (const auto& [address, times] : in) ASSERT_EQ(times, 1) << address;
  for (const auto& [address, times] : out) ASSERT_EQ(times, 1) << address;
  EXPECT_EQ(l.blockBytes, 2 * ((1001 * 4 + 63) / 64 * 64));  // send and recv, each rounded to 64
}

TEST(StagedLayout, InPlaceStaysInPlace) {
  std::vector<float> x(77);
  std::vector<char> block(4096);
  const auto a = call(CollectiveKind::kAllReduce, 77, x.data(), x.data());
  const StagedLayout l = layoutStaged(a, 1, 2, 1 << 20, block.data());
  ASSERT_EQ(l.segments.size(), 1u);
  EXPECT_TRUE(l.segments[0].host.inPlace());
  EXPECT_EQ(l.blockBytes, (77 * 4 + 63) / 64 * 64);
}

TEST(StagedLayout, InPlaceAllGatherKeepsTheInputInsideTheOutput) {
  std::vector<float> recv(4 * 10);
  std::vector<char> block(4096);
  const auto a = call(CollectiveKind::kAllGather, 10, recv.data() + 2 * 10, recv.data());
  const StagedLayout l = layoutStaged(a, 2, 4, 1 << 20, block.data());
  ASSERT_EQ(l.segments.size(), 1u);
  const auto& h = l.segments[0].host;
  EXPECT_EQ(h.send, static_cast<char*>(h.recv) + 2 * 10 * 4);
  EXPECT_EQ(l.blockBytes, (40 * 4 + 63) / 64 * 64);
  EXPECT_EQ(l.segments[0].in.size(), 1u);
}

TEST(StagedLayout, RootOnlyBuffersAreNotCopied) {
  std::vector<float> x(50), y(50);
  std::vector<char> block(4096);
  // A broadcast's non-root reads nothing; a reduce's non-root writes nothing.
  const StagedLayout b = layoutStaged(call(CollectiveKind::kBroadcast, 50, y.data(), y.data(), 0),
                                      1, 2, 4096, block.data());
  EXPECT_TRUE(b.segments[0].in.empty());
  EXPECT_EQ(b.segments[0].out.size(), 1u);
  const StagedLayout r = layoutStaged(call(CollectiveKind::kReduce, 50, x.data(), nullptr, 0), 1, 2,
                                      4096, block.data());
  EXPECT_EQ(r.segments[0].in.size(), 1u);
  EXPECT_TRUE(r.segments[0].out.empty());
  EXPECT_EQ(r.segments[0].host.recv, nullptr);
}

TEST(StagedLayout, EmptyCallsAndBadSegments) {
  std::vector<char> block(64);
  const StagedLayout l =
      layoutStaged(call(CollectiveKind::kAllReduce, 0, nullptr, nullptr), 0, 2, 4096, block.data());
  ASSERT_EQ(l.segments.size(), 1u);
  EXPECT_EQ(l.blockBytes, 0u);
  EXPECT_TRUE(l.segments[0].in.empty());
  EXPECT_THROW(layoutStaged(call(CollectiveKind::kAllReduce, 4, block.data(), block.data()), 0, 2,
                            0, block.data()),
               Error);
}

}  // namespace
}  // namespace smddp::planes
