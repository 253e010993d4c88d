// SPDX-License-Identifier: Apache-2.0
// gather and scatter algorithms (linear, arena) over the loopback transport and a heap arena of
// 4 KiB slots, for n = 2..16: per-rank counts {1, 13, 5n+1, 1037} x dtypes x in place / out of
// place (64 B and 256 KiB segments) x contiguous or list (the root's blocks as separate buffers,
// args.blocks), the root moving over every rank from case to case. Values
// are broadcastValue(rank, index), exact in every dtype; a rank's buffers that the collective
// must not write (a non-root's gather output, every input) are checked untouched.
#include <cstring>
#include <memory>
#include <vector>

#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

struct Case {
  size_t count;
  DataType dtype;
  bool inPlace;
  size_t segmentBytes;
  bool list;  // the root's blocks as separate buffers
};

std::vector<Case> cases(int n) {
  std::vector<Case> out;
  const size_t counts[] = {1, 13, 5 * static_cast<size_t>(n) + 1, 1037};
  for (size_t count : counts) {
    for (DataType dt : kAllDataTypes) {
      for (bool inPlace : {false, true}) {
        const size_t segment = count % 2 == 1 ? kTinySegment : 262144;
        out.push_back({count, dt, inPlace, segment, false});
        out.push_back({count, dt, inPlace, segment, true});
      }
    }
  }
  return out;
}

std::string name(const char* coll, const Algorithm& a, int n, const Case& c, int root) {
  return std::string(coll) + " " + a.name + " n=" + std::to_string(n) +
         " count=" + std::to_string(c.count) + " " + toString(c.dtype) +
         (c.inPlace ? " in place" : "") + (c.list ? " list" : "") + " root " + std::to_string(root);
}

// The list form of a contiguous buffer of n blocks: n separate buffers, filled from `whole`;
// args.blocks points at them (in reverse order of allocation, so that they are not contiguous).
struct Blocks {
  std::vector<std::unique_ptr<TestBuffer>> parts;
  Blocks(const TestBuffer& whole, size_t n, size_t count) {
    for (size_t r = 0; r < n; ++r)
      parts.push_back(std::make_unique<TestBuffer>(whole.dtype(), count));
    for (size_t j = 0; j < whole.count() && n > 0; ++j)
      parts[j / count]->set(j % count, whole.get(j));
  }
  std::vector<void*> addresses() {
    std::vector<void*> out;
    for (auto& p : parts) out.push_back(p->data());
    return out;
  }
  double get(size_t j, size_t count) const { return parts[j / count]->get(j % count); }
  bool guardsIntact() const {
    for (const auto& p : parts) {
      if (!p->guardIntact()) return false;
    }
    return true;
  }
};

void checkGather(RankContext& ctx, const Algorithm& a, const Case& c, int root) {
  const size_t n = static_cast<size_t>(ctx.size);
  const bool isRoot = ctx.rank == root;
  const bool inPlace = c.inPlace && isRoot;
  TestBuffer send(c.dtype, c.count), recv(c.dtype, c.count * n);
  recv.poison();
  const size_t mine = static_cast<size_t>(ctx.rank) * c.count;
  for (size_t i = 0; i < c.count; ++i) {
    (inPlace ? recv : send).set(inPlace ? mine + i : i, broadcastValue(ctx.rank, i));
  }
  const size_t es = dataTypeSize(c.dtype);
  const bool list = c.list && isRoot;
  Blocks blocks(recv, list ? n : 0, c.count);
  void* in = inPlace ? (list ? blocks.parts[static_cast<size_t>(root)]->data()
                             : static_cast<char*>(recv.data()) + mine * es)
                     : send.data();
  CollectiveArgs args(Call::of(CollectiveKind::kGather, c.dtype, c.count, ReduceOp::kSum, root), in,
                      isRoot && !list ? recv.data() : nullptr);
  if (list) args.blocks = blocks.addresses();
  ctx.run(a, args, c.segmentBytes);
  const std::string what = name("gather", a, ctx.size, c, root);
  for (size_t j = 0; j < c.count * n && isRoot; ++j) {
    const double want = broadcastValue(static_cast<int>(j / c.count), j % c.count);
    const double got = list ? blocks.get(j, c.count) : recv.get(j);
    if (got != want) {
      ctx.fail(what + ": index " + std::to_string(j) + ": got " + show(got) + ", expected " +
               show(want));
      break;
    }
  }
  if (list && !blocks.guardsIntact()) ctx.fail(what + ": wrote past an output block's end");
  TestBuffer untouched(c.dtype, c.count * n);
  untouched.poison();
  if (!isRoot && std::memcmp(recv.data(), untouched.data(), c.count * n * es) != 0) {
    ctx.fail(what + ": a non-root's output buffer was written");
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

void checkScatter(RankContext& ctx, const Algorithm& a, const Case& c, int root) {
  const size_t n = static_cast<size_t>(ctx.size);
  const bool isRoot = ctx.rank == root;
  const bool inPlace = c.inPlace && isRoot;
  TestBuffer send(c.dtype, c.count * n), recv(c.dtype, c.count);
  recv.poison();
  for (size_t j = 0; j < c.count * n && isRoot; ++j) send.set(j, broadcastValue(root, j, 3));
  const size_t es = dataTypeSize(c.dtype);
  const size_t mine = static_cast<size_t>(ctx.rank) * c.count;
  const bool list = c.list && isRoot;
  Blocks blocks(send, list ? n : 0, c.count);
  void* out = inPlace ? (list ? blocks.parts[static_cast<size_t>(root)]->data()
                              : static_cast<char*>(send.data()) + mine * es)
                      : recv.data();
  CollectiveArgs args(Call::of(CollectiveKind::kScatter, c.dtype, c.count, ReduceOp::kSum, root),
                      isRoot && !list ? send.data() : nullptr, out);
  if (list) args.blocks = blocks.addresses();
  ctx.run(a, args, c.segmentBytes);
  const std::string what = name("scatter", a, ctx.size, c, root);
  for (size_t j = 0; j < c.count * n && list; ++j) send.set(j, blocks.get(j, c.count));
  for (size_t i = 0; i < c.count; ++i) {
    const double got = inPlace ? send.get(mine + i) : recv.get(i);
    const double want = broadcastValue(root, mine + i, 3);
    if (got != want) {
      ctx.fail(what + ": index " + std::to_string(i) + ": got " + show(got) + ", expected " +
               show(want));
      break;
    }
  }
  for (size_t j = 0; j < c.count * n && isRoot; ++j) {
    if (send.get(j) != broadcastValue(root, j, 3)) {
      ctx.fail(what + ": the root's input was modified at index " + std::to_string(j));
      break;
    }
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

class GatherScatter : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(GatherScatter, EveryRootAndDtype) {
  const auto [algo, n] = GetParam();
  const Algorithm& g = algorithm(CollectiveKind::kGather, algo);
  const Algorithm& s = algorithm(CollectiveKind::kScatter, algo);
  const std::vector<Case> all = cases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (size_t k = 0; k < all.size(); ++k) {
      const int root = static_cast<int>(k % static_cast<size_t>(n));
      checkGather(ctx, g, all[k], root);
      checkScatter(ctx, s, all[k], root);
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, GatherScatter,
                         ::testing::Combine(::testing::Values("linear", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
