// SPDX-License-Identifier: Apache-2.0
// One checked collective per call, shared by the loopback algorithm tests: inputs are small
// integers of (rank, index), so expected values are closed-form and exact in every dtype, and a
// failure names the algorithm, n, count, dtype, op, placement, rank and index.
// all_reduce matrix: counts {1, 13, 5n+1, 1037} (count < n, odd, not divisible by n, multi-segment
// with 64 B segments) x dtypes x ops x in-place/out-of-place. Inputs are chosen per op so every
// result is exact (sums <= 64, products <= 16 in magnitude); AVG inputs cancel pairwise across
// ranks so the mean is an exact integer.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "algorithms_harness.h"
#include "smddp/error.h"

namespace smddp::algo::testing {

inline double allReduceInput(ReduceOp op, DataType dt, int n, int r, size_t i) {
  const int ii = static_cast<int>(i % 1000);
  const int sgn = isSigned(dt) ? 1 : 0;
  switch (op) {
    case ReduceOp::kSum:
      return (r * 7 + ii * 3) % 5 - 2 * sgn;
    case ReduceOp::kProd:
      return ((r + ii) % 4 == 0 ? 2 : 1) * (sgn && (r * 3 + ii) % 5 == 0 ? -1 : 1);
    case ReduceOp::kMin:
    case ReduceOp::kMax:
      return (r * 5 + ii * 3) % 11 - 5 * sgn;
    case ReduceOp::kAvg: {
      const int pairSign = (n % 2 == 1 && r == n - 1) ? 0 : (r % 2 == 0 ? 1 : -1);
      return ii % 5 + pairSign * (ii % 3);
    }
    default:  // bitwise ops: core_dtypes_test
      ADD_FAILURE() << "the algorithm checks do not cover " << toString(op);
  }
  return 0;
}

inline double allReduceExpected(ReduceOp op, DataType dt, int n, size_t i) {
  if (op == ReduceOp::kAvg) return static_cast<double>(i % 1000 % 5);
  double acc = allReduceInput(op, dt, n, 0, i);
  for (int r = 1; r < n; ++r) {
    const double v = allReduceInput(op, dt, n, r, i);
    if (op == ReduceOp::kSum) acc += v;
    if (op == ReduceOp::kProd) acc *= v;
    if (op == ReduceOp::kMin) acc = std::min(acc, v);
    if (op == ReduceOp::kMax) acc = std::max(acc, v);
  }
  return acc;
}

struct AllReduceCase {
  size_t count;
  DataType dtype;
  ReduceOp op;
  bool inPlace;
  size_t segmentBytes;
};

inline std::vector<AllReduceCase> allReduceCases(int n) {
  struct Shape {
    size_t count;
    size_t segment;
  };
  const Shape shapes[] = {
      {1, 262144}, {13, kTinySegment}, {5 * size_t(n) + 1, 262144}, {1037, kTinySegment}};
  std::vector<AllReduceCase> cases;
  for (const Shape& s : shapes) {
    for (DataType dt : kAllDataTypes) {
      for (ReduceOp op : kAllOps) {
        if (op == ReduceOp::kAvg && !isFloatingPoint(dt)) continue;
        for (bool inPlace : {false, true}) cases.push_back({s.count, dt, op, inPlace, s.segment});
      }
    }
  }
  return cases;
}

inline void checkAllReduce(RankContext& ctx, const Algorithm& a, const AllReduceCase& c) {
  const int n = ctx.size;
  TestBuffer send(c.dtype, c.count), recv(c.dtype, c.count);
  for (size_t i = 0; i < c.count; ++i) send.set(i, allReduceInput(c.op, c.dtype, n, ctx.rank, i));
  recv.poison();
  TestBuffer& out = c.inPlace ? send : recv;
  CollectiveArgs args;
  args.kind = CollectiveKind::kAllReduce;
  args.send = send.data();
  args.recv = out.data();
  args.count = c.count;
  args.dtype = c.dtype;
  args.op = c.op;
  ctx.run(a, args, c.segmentBytes);
  const std::string what = describeCase(a, n, c.count, c.dtype, c.op, c.inPlace, c.segmentBytes);
  for (size_t i = 0; i < c.count; ++i) {
    const double want = allReduceExpected(c.op, c.dtype, n, i);
    if (out.get(i) != want) {
      ctx.fail(what + ": index " + std::to_string(i) + ": got " + show(out.get(i)) + ", expected " +
               show(want));
      break;
    }
  }
  if (!c.inPlace) {
    for (size_t i = 0; i < c.count; ++i) {
      if (send.get(i) != allReduceInput(c.op, c.dtype, n, ctx.rank, i)) {
        ctx.fail(what + ": send buffer modified at index " + std::to_string(i));
        break;
      }
    }
  }
  if (!out.guardIntact()) ctx.fail(what + ": wrote past the end of the output");
}

// reduce_scatter of the all_reduce matrix's inputs at global index q * count + i: this rank's
// element i is the all_reduce result at rank * count + i, closed-form and exact in every dtype.
inline void checkReduceScatter(RankContext& ctx, const Algorithm& a, const AllReduceCase& c) {
  const int n = ctx.size;
  const size_t total = c.count * static_cast<size_t>(n);
  TestBuffer send(c.dtype, total), recv(c.dtype, c.count);
  for (size_t j = 0; j < total; ++j) send.set(j, allReduceInput(c.op, c.dtype, n, ctx.rank, j));
  recv.poison();
  const size_t mine = static_cast<size_t>(ctx.rank) * c.count;
  CollectiveArgs args(
      Call::of(CollectiveKind::kReduceScatter, c.dtype, c.count, c.op), send.data(),
      c.inPlace ? static_cast<char*>(send.data()) + mine * dataTypeSize(c.dtype) : recv.data());
  ctx.run(a, args, c.segmentBytes);
  const std::string what = describeCase(a, n, c.count, c.dtype, c.op, c.inPlace, c.segmentBytes);
  for (size_t i = 0; i < c.count; ++i) {
    const double got = c.inPlace ? send.get(mine + i) : recv.get(i);
    const double want = allReduceExpected(c.op, c.dtype, n, mine + i);
    if (got != want) {
      ctx.fail(what + ": index " + std::to_string(i) + ": got " + show(got) + ", expected " +
               show(want));
      break;
    }
  }
  for (size_t j = 0; j < total && !c.inPlace; ++j) {
    if (send.get(j) != allReduceInput(c.op, c.dtype, n, ctx.rank, j)) {
      ctx.fail(what + ": send buffer modified at index " + std::to_string(j));
      break;
    }
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

// Runs the whole matrix for one algorithm and rank count on one fabric, with consecutive sequence
// numbers: a rank may start the next case while its peers finish the previous one.
inline void runAllReduceMatrix(const char* name, int n) {
  const Algorithm& a = algorithm(CollectiveKind::kAllReduce, name);
  const std::vector<AllReduceCase> cases = allReduceCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (const AllReduceCase& c : cases) checkAllReduce(ctx, a, c);
  });
}

// salt varies the values between calls (a stale slot then shows as wrong data).
inline double broadcastValue(int root, size_t i, size_t salt = 0) {
  return static_cast<double>((root * 11 + i + salt * 7) % 100);
}

inline void checkBroadcast(RankContext& ctx, const Algorithm& a, size_t count, DataType dt,
                           int root, bool inPlace, size_t segment, size_t salt = 0) {
  TestBuffer send(dt, count), recv(dt, count);
  const bool isRoot = ctx.rank == root;
  send.poison();  // a non-root's send is never read
  if (isRoot) {
    for (size_t i = 0; i < count; ++i) send.set(i, broadcastValue(root, i, salt));
  }
  recv.poison();
  TestBuffer& out = inPlace ? send : recv;
  CollectiveArgs args;
  args.kind = CollectiveKind::kBroadcast;
  args.send = send.data();
  args.recv = out.data();
  args.count = count;
  args.dtype = dt;
  args.root = root;
  ctx.run(a, args, segment);
  const std::string what = describeCase(a, ctx.size, count, dt, ReduceOp::kSum, inPlace, segment) +
                           " root=" + std::to_string(root) +
                           (salt != 0 ? " call " + std::to_string(salt) : "");
  for (size_t i = 0; i < count; ++i) {
    if (out.get(i) != broadcastValue(root, i, salt)) {
      ctx.fail(what + ": index " + std::to_string(i) + ": got " + show(out.get(i)) + ", expected " +
               show(broadcastValue(root, i, salt)));
      break;
    }
  }
  if (!out.guardIntact()) ctx.fail(what + ": wrote past the end of the output");
}

// In-place float32 broadcast arguments over buf (the identity tests).
inline CollectiveArgs broadcastArgs(std::vector<float>& buf, size_t count, int root) {
  CollectiveArgs args;
  args.kind = CollectiveKind::kBroadcast;
  args.send = args.recv = buf.data();
  args.count = count;
  args.dtype = DataType::kFloat32;
  args.root = root;
  return args;
}

// True when `e` is a kMismatch that names `collective` and, after "during ", `during` (the
// collective in which a deferred identity check found it).
inline bool namesMismatch(const Error& e, const std::string& collective,
                          const std::string& during) {
  const std::string what = e.what();
  return e.code() == ErrorCode::kMismatch && what.find(collective) != std::string::npos &&
         what.find("during " + during) != std::string::npos;
}

// A barrier (algorithm `name`) that must fail on this rank with a mismatch naming `collective`,
// seen during `during`.
inline void expectBarrierMismatch(RankContext& ctx, const char* name,
                                  const std::string& collective, const std::string& during) {
  try {
    ctx.run(algorithm(CollectiveKind::kBarrier, name), CollectiveArgs{}, 1 << 20);
    ctx.fail("a barrier ran although the ranks disagreed about " + collective);
  } catch (const Error& e) {
    if (!namesMismatch(e, collective, during)) ctx.fail(std::string("wrong error: ") + e.what());
  }
}

enum class Output { kContiguous, kBlockList, kInPlace };
inline const char* toString(Output o) {
  return o == Output::kContiguous  ? "contiguous"
         : o == Output::kBlockList ? "block-list"
                                   : "in-place";
}

inline double gatherValue(int r, size_t i) { return static_cast<double>((r * 31 + i) % 97); }

inline void checkAllGather(RankContext& ctx, const Algorithm& a, size_t count, DataType dt,
                           Output o, size_t segment) {
  const int n = ctx.size;
  TestBuffer contiguous(dt, count * static_cast<size_t>(n));
  std::vector<std::unique_ptr<TestBuffer>> list;
  for (int r = 0; r < n; ++r) list.push_back(std::make_unique<TestBuffer>(dt, count));
  contiguous.poison();
  for (auto& b : list) b->poison();
  CollectiveArgs args;
  args.kind = CollectiveKind::kAllGather;
  args.count = count;
  args.dtype = dt;
  if (o == Output::kBlockList) {  // blocks in reverse memory order
    for (int r = n - 1; r >= 0; --r) args.blocks.push_back(list[static_cast<size_t>(r)]->data());
  } else {
    args.recv = contiguous.data();
  }
  TestBuffer send(dt, count);
  void* own = args.block(static_cast<size_t>(ctx.rank));
  for (size_t i = 0; i < count; ++i) {
    send.set(i, gatherValue(ctx.rank, i));
    if (o == Output::kInPlace) setValue(dt, own, i, gatherValue(ctx.rank, i));
  }
  args.send = o == Output::kInPlace ? own : send.data();
  ctx.run(a, args, segment);
  const std::string what =
      describeCase(a, n, count, dt, ReduceOp::kSum, o == Output::kInPlace, segment) + " " +
      toString(o);
  for (int r = 0; r < n; ++r) {
    for (size_t i = 0; i < count; ++i) {
      const double got = getValue(dt, args.block(static_cast<size_t>(r)), i);
      if (got != gatherValue(r, i)) {
        ctx.fail(what + ": block " + std::to_string(r) + " index " + std::to_string(i) + ": got " +
                 show(got) + ", expected " + show(gatherValue(r, i)));
        return;
      }
    }
  }
  bool guards = contiguous.guardIntact();
  for (auto& b : list) guards = guards && b->guardIntact();
  if (!guards) ctx.fail(what + ": wrote past the end of an output block");
}

}  // namespace smddp::algo::testing
