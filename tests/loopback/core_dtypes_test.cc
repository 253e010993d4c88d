// SPDX-License-Identifier: Apache-2.0
// Every dtype and every op defined for it (smddp/types.h), through the public collectives that
// reduce (all_reduce out of place and in place, reduce to a root, reduce_scatter) and the ones
// that move bytes (broadcast, all_gather), over world sizes 1, 2, 3, 5, 7, with and without the
// shared arena, odd and zero counts. Expected values are folded rank by rank with the independent
// reference of tests/unit/reduce_test_util.h; the inputs are chosen so that every order of
// combination gives the same exact result (integers and bool wrap or combine exactly, floats are
// small integers or powers of two, complex numbers units and small integers).
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "loopback_group.h"
#include "unit/reduce_test_util.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using reduce::testing::isFloat8;
using reduce::testing::isInteger;
using reduce::testing::referenceElement;
using reduce::testing::sameElement;
using reduce::testing::storeFloat;
using Bytes = std::vector<uint8_t>;

// Rank r's input for (dtype, op): count elements.
Bytes input(DataType t, ReduceOp op, int n, int rank, size_t count) {
  const size_t es = dataTypeSize(t);
  Bytes b(count * es + 1);
  if (isInteger(t)) {
    std::mt19937_64 rng(uint64_t(rank) * 7919 + uint64_t(t) * 31 + uint64_t(op));
    reduce::testing::fillRandom(t, b.data(), count, rng);
    return b;
  }
  for (size_t i = 0; i < count; ++i) {
    const bool sum = op == ReduceOp::kSum || op == ReduceOp::kAvg;
    if (t == DataType::kFloat8E8M0FNU) {  // powers of two only: one rank holds the value
      uint8_t bits = 0;
      if (sum) bits = size_t(rank) == i % size_t(n) ? uint8_t(127 + i % 5) : 0;
      else if (op == ReduceOp::kProd) bits = uint8_t(127 + (rank + i) % 2);
      else bits = uint8_t(120 + (rank * 5 + i * 3) % 11);
      b[i] = bits;
    } else if (isComplex(t)) {
      double re, im;
      if (sum) {
        re = double((rank + i) % 2);
        im = double((rank + 2 * i) % 3);
      } else {  // units, and 2 now and then: exact products in any order
        const int k = int((rank + i) % 4);
        const double scale = (rank * 3 + i) % 5 == 0 ? 2.0 : 1.0;
        re = scale * (k == 0 ? 1 : k == 2 ? -1 : 0);
        im = scale * (k == 1 ? 1 : k == 3 ? -1 : 0);
      }
      if (t == DataType::kComplex64) {
        const float v[2] = {float(re), float(im)};
        std::memcpy(&b[i * es], v, sizeof v);
      } else {
        const double v[2] = {re, im};
        std::memcpy(&b[i * es], v, sizeof v);
      }
    } else {
      double v;
      if (sum) v = double((rank + i) % 2);
      else if (op == ReduceOp::kProd) v = (rank * 3 + i) % 4 == 0 ? 2.0 : ((rank + i) % 5 == 0 ? -1.0 : 1.0);
      else v = double(int((rank * 5 + i * 3) % 11) - 5);
      storeFloat(t, b.data(), i, v);
    }
  }
  return b;
}

// The test-side average: float32 division for the narrow floats, as the engine does.
void averageReference(DataType t, Bytes& b, size_t count, int n) {
  const size_t es = dataTypeSize(t);
  for (size_t i = 0; i < count; ++i) {
    uint8_t* p = &b[i * es];
    if (isInteger(t)) {
      const __int128 v = reduce::testing::loadInt(t, b.data(), i);
      reduce::testing::storeInt(t, b.data(), i, v / n);  // C division truncates toward zero
    } else if (t == DataType::kComplex64) {
      float v[2];
      std::memcpy(v, p, sizeof v);
      v[0] /= float(n), v[1] /= float(n);
      std::memcpy(p, v, sizeof v);
    } else if (t == DataType::kComplex128) {
      double v[2];
      std::memcpy(v, p, sizeof v);
      v[0] /= n, v[1] /= n;
      std::memcpy(p, v, sizeof v);
    } else if (t == DataType::kFloat64) {
      storeFloat(t, b.data(), i, reduce::testing::loadFloat(t, b.data(), i) / n);
    } else {
      const float q = float(reduce::testing::loadFloat(t, b.data(), i)) / float(n);
      storeFloat(t, b.data(), i, double(q));
    }
  }
}

Bytes expected(DataType t, ReduceOp op, int n, size_t count) {
  Bytes acc = input(t, op, n, 0, count);
  for (int r = 1; r < n; ++r) {
    const Bytes x = input(t, op, n, r, count);
    for (size_t i = 0; i < count; ++i) referenceElement(t, op, acc.data(), x.data(), acc.data(), i);
  }
  if (op == ReduceOp::kAvg) averageReference(t, acc, count, n);
  return acc;
}

void expectSame(DataType t, ReduceOp op, const uint8_t* got, const uint8_t* want, size_t count,
                const std::string& what) {
  for (size_t i = 0; i < count; ++i) {
    ASSERT_TRUE(sameElement(t, op, got, want, i))
        << what << " " << toString(t) << " " << toString(op) << " index " << i;
  }
}

void checkReductions(Communicator& c, int rank, int n, DataType t, ReduceOp op, size_t count) {
  const size_t es = dataTypeSize(t);
  const Bytes in = input(t, op, n, rank, count);
  const Bytes want = expected(t, op, n, count);
  Bytes out(count * es + 1, 0xA5), inplace = in;
  c.allReduceBlocking(Buffer(in.data(), count, t), Buffer(out.data(), count, t), op);
  expectSame(t, op, out.data(), want.data(), count, "all_reduce rank " + std::to_string(rank));
  c.allReduceBlocking(Buffer(inplace.data(), count, t), Buffer(inplace.data(), count, t), op);
  expectSame(t, op, inplace.data(), want.data(), count, "in-place all_reduce");
  const int root = n - 1;
  Bytes rooted(count * es + 1, 0xA5);
  c.reduceBlocking(Buffer(in.data(), count, t), Buffer(rooted.data(), count, t), op, root);
  if (rank == root) expectSame(t, op, rooted.data(), want.data(), count, "reduce at the root");
  // reduce_scatter: count elements per rank, so the whole is n * count.
  const Bytes whole = [&] {
    Bytes w(size_t(n) * count * es + 1);
    for (int r = 0; r < n; ++r) {
      const Bytes part = input(t, op, n, (rank + r) % n, count);  // varied across blocks
      std::memcpy(&w[size_t(r) * count * es], part.data(), count * es);
    }
    return w;
  }();
  Bytes slice(count * es + 1, 0xA5);
  c.reduceScatterBlocking(Buffer(whole.data(), size_t(n) * count, t),
                          Buffer(slice.data(), count, t), op);
  // Block `rank` of rank q's whole is input((q + rank) % n): the same set of inputs as
  // all_reduce's, so the same result.
  expectSame(t, op, slice.data(), want.data(), count, "reduce_scatter rank " + std::to_string(rank));
}

void checkMoves(Communicator& c, int rank, int n, DataType t, size_t count) {
  const size_t es = dataTypeSize(t);
  auto block = [&](int r) {
    Bytes b(count * es + 1);
    for (size_t k = 0; k < count * es; ++k) b[k] = uint8_t(r * 37 + k * 11 + 5);
    return b;
  };
  Bytes bcast = rank == 0 ? block(0) : Bytes(count * es + 1, 0);
  c.broadcastBlocking(Buffer(bcast.data(), count, t), Buffer(bcast.data(), count, t), 0);
  ASSERT_EQ(0, std::memcmp(bcast.data(), block(0).data(), count * es)) << toString(t);
  const Bytes mine = block(rank);
  Bytes all(size_t(n) * count * es + 1, 0);
  c.allGatherBlocking(Buffer(mine.data(), count, t), Buffer(all.data(), size_t(n) * count, t));
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(0, std::memcmp(&all[size_t(r) * count * es], block(r).data(), count * es))
        << toString(t) << " all_gather block " << r;
  }
}

struct World {
  int ranks;
  size_t mailBytes;  // > 0: the ranks share an arena, as on one host
};

class CoreDtypes : public ::testing::TestWithParam<World> {};

TEST_P(CoreDtypes, EveryDtypeEveryDefinedOp) {
  const World w = GetParam();
  Options opts;
  opts.timeout = 20s;
  auto comms = testing::makeLoopbackGroup(w.ranks, opts, nullptr, w.mailBytes);
  testing::runRanks(comms, [&](int rank, Communicator& c) {
    for (int d = 0; d < kNumDataTypes; ++d) {
      const DataType t = DataType(d);
      for (size_t count : {size_t{0}, size_t{1}, size_t{13}, size_t{1001}}) {
        for (int o = 0; o < kNumReduceOps; ++o) {
          if (!reductionDefined(t, ReduceOp(o))) continue;
          checkReductions(c, rank, w.ranks, t, ReduceOp(o), count);
        }
        checkMoves(c, rank, w.ranks, t, count);
      }
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Worlds, CoreDtypes,
                         ::testing::Values(World{1, 0}, World{2, 0}, World{3, 0}, World{5, 0},
                                           World{7, 0}, World{3, 4096}, World{5, 4096}),
                         [](const ::testing::TestParamInfo<World>& p) {
                           return std::to_string(p.param.ranks) +
                                  (p.param.mailBytes > 0 ? "ranksArena" : "ranks");
                         });

// A pair that is not defined fails before anything moves, naming dtype, op and why, and the
// communicator stays usable.
TEST(CoreDtypesErrors, UndefinedPairsNameWhy) {
  Options opts;
  opts.timeout = 10s;
  auto comms = testing::makeLoopbackGroup(2, opts);
  testing::runRanks(comms, [&](int rank, Communicator& c) {
    float x[4] = {1, 2, 3, 4};
    for (auto [t, op] : {std::pair{DataType::kComplex64, ReduceOp::kMax},
                         std::pair{DataType::kFloat32, ReduceOp::kBxor},
                         std::pair{DataType::kBool, ReduceOp::kAvg}}) {
      try {
        c.allReduceBlocking(Buffer(x, 1, t), Buffer(x, 1, t), op);
        ADD_FAILURE() << "accepted " << toString(t) << " " << toString(op);
      } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(e.code(), ErrorCode::kUnsupported) << msg;
        EXPECT_NE(msg.find(toString(t)), std::string::npos) << msg;
        EXPECT_NE(msg.find(toString(op)), std::string::npos) << msg;
        EXPECT_NE(msg.find("rank " + std::to_string(rank)), std::string::npos) << msg;
        EXPECT_NE(msg.find(reductionRefusal(t, op)), std::string::npos) << msg;
      }
    }
    c.allReduceBlocking(Buffer(x, 4, DataType::kFloat32), Buffer(x, 4, DataType::kFloat32),
                        ReduceOp::kSum);
    EXPECT_EQ(x[3], 8.0f);
  });
}

}  // namespace
}  // namespace smddp
