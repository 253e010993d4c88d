// SPDX-License-Identifier: Apache-2.0
// reduce algorithms (binomial, arena) over the loopback transport and a heap arena of 4 KiB
// slots: the all_reduce matrix (counts {1, 13, 5n+1, 1037} x dtypes x ops x in place / out of
// place) with the root moving over every rank from case to case, for n = 2..16. The root's
// output must equal the all_reduce result; the other ranks' output buffers must stay untouched.
#include <cstring>

#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

void checkReduce(RankContext& ctx, const Algorithm& a, const AllReduceCase& c, int root) {
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

class Reduce : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(Reduce, MatrixWithEveryRoot) {
  const auto [name, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kReduce, name);
  const std::vector<AllReduceCase> cases = allReduceCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (size_t k = 0; k < cases.size(); ++k) {
      checkReduce(ctx, a, cases[k], static_cast<int>(k % static_cast<size_t>(n)));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Reduce,
                         ::testing::Combine(::testing::Values("binomial", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
