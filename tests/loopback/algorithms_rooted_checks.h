// SPDX-License-Identifier: Apache-2.0
// Closed-form checks of the rooted collectives (reduce, gather, scatter) shared by their tests
// and the hierarchical ones: the root's output equals the closed form, every buffer the
// collective must not write (a non-root's output, every input) stays untouched, no write past a
// buffer's end. gather and scatter run contiguous or with the root's blocks as separate buffers.
#pragma once

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "algorithms_checks.h"

namespace smddp::algo::testing {

struct RootedCase {
  size_t count;
  DataType dtype;
  bool inPlace;
  size_t segmentBytes;
  bool list;  // the root's blocks as separate buffers
};

inline std::vector<RootedCase> rootedCases(int n) {
  std::vector<RootedCase> out;
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

inline std::string rootedName(const char* coll, const Algorithm& a, int n, const RootedCase& c,
                              int root) {
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

inline void checkGather(RankContext& ctx, const Algorithm& a, const RootedCase& c, int root) {
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
  const std::string what = rootedName("gather", a, ctx.size, c, root);
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

inline void checkScatter(RankContext& ctx, const Algorithm& a, const RootedCase& c, int root) {
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
  const std::string what = rootedName("scatter", a, ctx.size, c, root);
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

inline void checkReduce(RankContext& ctx, const Algorithm& a, const AllReduceCase& c, int root) {
  const int n = ctx.size;
  const bool isRoot = ctx.rank == root;
  TestBuffer send(c.dtype, c.count), recv(c.dtype, c.count);
  for (size_t i = 0; i < c.count; ++i) send.set(i, allReduceInput(c.op, c.dtype, n, ctx.rank, i));
  recv.poison();
  const bool inPlace = c.inPlace && isRoot;
  TestBuffer& out = inPlace ? send : recv;
  CollectiveArgs args(Call::of(CollectiveKind::kReduce, c.dtype, c.count, c.op, root), send.data(),
                      isRoot ? out.data() : nullptr);
  ctx.run(a, args, c.segmentBytes);
  const std::string what = describeCase(a, n, c.count, c.dtype, c.op, c.inPlace, c.segmentBytes) +
                           " root " + std::to_string(root);
  for (size_t i = 0; i < c.count && isRoot; ++i) {
    const double want = allReduceExpected(c.op, c.dtype, n, i);
    if (out.get(i) != want) {
      ctx.fail(what + ": index " + std::to_string(i) + ": got " + show(out.get(i)) + ", expected " +
               show(want));
      break;
    }
  }
  TestBuffer untouched(c.dtype, c.count);  // poison, compared as bytes (a poisoned float is NaN)
  untouched.poison();
  if (!isRoot && std::memcmp(recv.data(), untouched.data(), c.count * dataTypeSize(c.dtype)) != 0) {
    ctx.fail(what + ": a non-root's output buffer was written");
  }
  for (size_t i = 0; i < c.count && !inPlace; ++i) {
    if (send.get(i) != allReduceInput(c.op, c.dtype, n, ctx.rank, i)) {
      ctx.fail(what + ": send buffer modified at index " + std::to_string(i));
      break;
    }
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

}  // namespace smddp::algo::testing
