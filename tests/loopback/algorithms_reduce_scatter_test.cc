// SPDX-License-Identifier: Apache-2.0
// reduce_scatter algorithms (ring, arena) over the loopback transport and a heap arena of 4 KiB
// slots: per-rank counts {1, 13, 5n+1, 1037} (count < n, odd, not divisible by n, several
// segments with 64 B segments and several arena uses) x dtypes x ops x in place (the output is
// this rank's block of the input) / out of place, for n = 2..16. Inputs are those of the
// all_reduce matrix at the global index q * count + i, so the expected value of this rank's
// element i is the all_reduce result at rank * count + i: closed-form and exact in every dtype.
#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

void checkReduceScatter(RankContext& ctx, const Algorithm& a, const AllReduceCase& c) {
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

class ReduceScatter : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(ReduceScatter, Matrix) {
  const auto [name, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kReduceScatter, name);
  const std::vector<AllReduceCase> cases = allReduceCases(n);
  runRanks(n, [&](RankContext& ctx) {
    for (const AllReduceCase& c : cases) checkReduceScatter(ctx, a, c);
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, ReduceScatter,
                         ::testing::Combine(::testing::Values("ring", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

}  // namespace
}  // namespace smddp::algo::testing
