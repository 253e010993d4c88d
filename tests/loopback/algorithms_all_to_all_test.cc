// SPDX-License-Identifier: Apache-2.0
// all_to_all and all_to_allv algorithms (pairwise, arena) over the loopback transport and a heap
// arena of 4 KiB slots, for n = 2..16. Equal blocks: counts {1, 13, 5n+1, 1037} x dtypes (64 B and
// 256 KiB segments). Uneven pieces: counts from a formula of (source, destination) with zeros
// among them, small and multi-use, laid out in the input in reverse rank order with gaps (so a
// piece's place is not its rank's block). Values pieceValue(source, destination, index) are exact
// in every dtype; outputs are checked element by element, inputs unmodified, gaps and guards
// untouched. Mismatched uneven counts fail with kMismatch on every rank. hier (and hier_leader,
// equal blocks) run the same checks over 2 and 3 hosts of 2 and 3 ranks, interleaved and
// consecutive; hier_leader also over hosts of different sizes.
#include <cstring>

#include "algorithms_checks.h"

namespace smddp::algo::testing {
namespace {

double pieceValue(size_t from, size_t to, size_t i) {
  return static_cast<double>((from * 13 + to * 7 + i) % 97);
}

// Elements rank `from` sends to rank `to` in the uneven cases: zeros for some pairs, several arena
// uses (4 KiB slots shared n ways) for others when `large`.
size_t unevenCount(size_t from, size_t to, bool large) {
  const size_t c = (from * 3 + to * 5) % 7;
  return large ? c * 311 : c;
}

std::string name(const Algorithm& a, int n, const char* form, size_t count, DataType dt) {
  return std::string("all_to_all ") + a.name + " n=" + std::to_string(n) + " " + form +
         " count=" + std::to_string(count) + " " + toString(dt);
}

void checkEqual(RankContext& ctx, const Algorithm& a, size_t count, DataType dt, size_t segment) {
  const auto n = static_cast<size_t>(ctx.size);
  const auto me = static_cast<size_t>(ctx.rank);
  TestBuffer send(dt, count * n), recv(dt, count * n);
  recv.poison();
  for (size_t j = 0; j < count * n; ++j) send.set(j, pieceValue(me, j / count, j % count));
  CollectiveArgs args(Call::of(CollectiveKind::kAllToAll, dt, count), send.data(), recv.data());
  ctx.run(a, args, segment);
  const std::string what = name(a, ctx.size, "equal", count, dt);
  for (size_t j = 0; j < count * n; ++j) {
    if (recv.get(j) != pieceValue(j / count, me, j % count)) {
      ctx.fail(what + ": index " + std::to_string(j) + ": got " + show(recv.get(j)) +
               ", expected " + show(pieceValue(j / count, me, j % count)));
      break;
    }
    if (send.get(j) != pieceValue(me, j / count, j % count)) {
      ctx.fail(what + ": the input was modified at index " + std::to_string(j));
      break;
    }
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

// Pieces in reverse rank order with a gap of 3 elements before each. `skew` adds to every count
// this rank expects (a mismatch when non-zero).
void checkUneven(RankContext& ctx, const Algorithm& a, DataType dt, bool large, size_t skew = 0) {
  const auto n = static_cast<size_t>(ctx.size);
  const auto me = static_cast<size_t>(ctx.rank);
  constexpr size_t kGap = 3;
  std::vector<size_t> sendAt(n), recvAt(n);
  size_t sendTotal = 0, recvTotal = 0;
  for (size_t k = n; k-- > 0;) {
    sendAt[k] = sendTotal + kGap;
    sendTotal = sendAt[k] + unevenCount(me, k, large);
    recvAt[k] = recvTotal + kGap;
    recvTotal = recvAt[k] + unevenCount(k, me, large) + (k == me ? 0 : skew);
  }
  TestBuffer send(dt, sendTotal), recv(dt, recvTotal);
  send.poison();
  recv.poison();
  const size_t es = dataTypeSize(dt);
  CollectiveArgs args(Call::of(CollectiveKind::kAllToAllV, dt, 0), nullptr, nullptr);
  args.blocks.resize(2 * n);
  args.counts.resize(2 * n);
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < unevenCount(me, k, large); ++i)
      send.set(sendAt[k] + i, pieceValue(me, k, i));
    args.blocks[k] = static_cast<unsigned char*>(send.data()) + sendAt[k] * es;
    args.counts[k] = unevenCount(me, k, large);
    args.blocks[n + k] = static_cast<unsigned char*>(recv.data()) + recvAt[k] * es;
    args.counts[n + k] = unevenCount(k, me, large) + (k == me ? 0 : skew);
  }
  const std::string what = name(a, ctx.size, large ? "uneven large" : "uneven", 0, dt);
  if (skew != 0) {
    try {
      ctx.run(a, args, 1 << 20);
      ctx.fail(what + ": ran although the counts of the pairs differ");
    } catch (const Error& e) {
      const std::string text = e.what();
      const bool named = text.find("counts differ") != std::string::npos ||  // arena
                         text.find("different sizes") != std::string::npos;  // messages
      if (e.code() != ErrorCode::kMismatch || text.find("all_to_allv") == std::string::npos ||
          !named) {
        ctx.fail(what + ": wrong error: " + text);
      }
    }
    return;
  }
  ctx.run(a, args, large ? kTinySegment : 1 << 20);
  TestBuffer untouched(dt, 1);
  untouched.poison();
  for (size_t k = 0; k < n; ++k) {
    for (size_t i = 0; i < unevenCount(k, me, large); ++i) {
      if (recv.get(recvAt[k] + i) != pieceValue(k, me, i)) {
        ctx.fail(what + ": piece from rank " + std::to_string(k) + " index " + std::to_string(i) +
                 ": got " + show(recv.get(recvAt[k] + i)) + ", expected " +
                 show(pieceValue(k, me, i)));
        return;
      }
    }
    const unsigned char* gap = static_cast<unsigned char*>(recv.data()) + (recvAt[k] - kGap) * es;
    for (size_t g = 0; g < kGap; ++g) {
      if (std::memcmp(gap + g * es, untouched.data(), es) != 0) {
        ctx.fail(what + ": the gap before the piece from rank " + std::to_string(k) +
                 " was written");
        return;
      }
    }
  }
  if (!recv.guardIntact() || !send.guardIntact()) ctx.fail(what + ": wrote past a buffer's end");
}

class AllToAll : public ::testing::TestWithParam<std::tuple<const char*, int>> {};

TEST_P(AllToAll, EqualBlocksEveryDtype) {
  const auto [algo, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kAllToAll, algo);
  const size_t counts[] = {1, 13, 5 * static_cast<size_t>(n) + 1, 1037};
  runRanks(n, [&](RankContext& ctx) {
    for (size_t count : counts) {
      for (DataType dt : kAllDataTypes) {
        checkEqual(ctx, a, count, dt, count % 2 == 1 ? kTinySegment : 262144);
      }
    }
  });
}

TEST_P(AllToAll, UnevenPiecesEveryDtype) {
  const auto [algo, n] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kAllToAllV, algo);
  runRanks(n, [&](RankContext& ctx) {
    for (DataType dt : kAllDataTypes) {
      checkUneven(ctx, a, dt, false);
      checkUneven(ctx, a, dt, true);
    }
  });
}

TEST_P(AllToAll, MismatchedCountsFailOnEveryRank) {
  const auto [algo, n] = GetParam();
  // Pairwise with more than one window: a rank that failed in its first window never sends the
  // later ones, so its peers would wait out the harness's 30 s bound (the core's watch names the
  // failed rank instead: tests/mp).
  if (std::string(algo) == "pairwise" && n > 9) GTEST_SKIP() << "one window only";
  const Algorithm& a = algorithm(CollectiveKind::kAllToAllV, algo);
  runRanks(n, [&](RankContext& ctx) { checkUneven(ctx, a, DataType::kInt32, false, 1); });
}

INSTANTIATE_TEST_SUITE_P(Ranks, AllToAll,
                         ::testing::Combine(::testing::Values("pairwise", "arena"),
                                            ::testing::Values(2, 3, 4, 5, 7, 8, 16)));

// hier over thread-ranks laid out as hosts: interleaved (rank r on host r % hosts: the pieces of
// a host's ranks are not adjacent in the output, they land through scratch) and consecutive
// (equal blocks then land straight in place).
class HierAllToAll : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(HierAllToAll, EqualBlocks) {
  const auto [hosts, perHost, consecutive] = GetParam();
  const size_t counts[] = {1, 13, 5 * static_cast<size_t>(hosts * perHost) + 1, 1037};
  for (const char* name : {"hier", "hier_leader"}) {
    const Algorithm& a = algorithm(CollectiveKind::kAllToAll, name);
    runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
      for (size_t count : counts) {
        for (DataType dt : kAllDataTypes) checkEqual(ctx, a, count, dt, kTinySegment);
      }
    }, 4096, consecutive);
  }
}

TEST_P(HierAllToAll, UnevenPieces) {
  const auto [hosts, perHost, consecutive] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kAllToAllV, "hier");
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    for (DataType dt : {DataType::kFloat32, DataType::kInt8, DataType::kFloat64}) {
      checkUneven(ctx, a, dt, false);
      checkUneven(ctx, a, dt, true);
    }
  }, 4096, consecutive);
}

TEST_P(HierAllToAll, MismatchedCountsFailOnEveryRank) {
  const auto [hosts, perHost, consecutive] = GetParam();
  const Algorithm& a = algorithm(CollectiveKind::kAllToAllV, "hier");
  runRanksOnHosts(hosts, perHost, [&](RankContext& ctx) {
    checkUneven(ctx, a, DataType::kInt32, false, 1);
  }, 4096, consecutive);
}

// Hosts of different sizes (3 + 2 + 1 consecutive and interleaved, 1 + 2, 2 + 1 + 4): hier_leader,
// where a pair of hosts exchanges L_h x L_g blocks.
TEST(HierAllToAllUnevenHosts, LeaderEqualBlocks) {
  const Algorithm& a = algorithm(CollectiveKind::kAllToAll, "hier_leader");
  const std::vector<std::vector<int>> layouts = {
      {0, 0, 0, 1, 1, 2}, {0, 1, 0, 2, 1, 0}, {0, 1, 1}, {0, 0, 1, 2, 2, 2, 2}};
  for (const auto& hostOf : layouts) {
    const size_t counts[] = {0, 1, 13, 5 * hostOf.size() + 1, 1037};
    runRanksOnUnevenHosts(hostOf, [&](RankContext& ctx) {
      for (size_t count : counts) {
        for (DataType dt : kAllDataTypes) checkEqual(ctx, a, count, dt, kTinySegment);
      }
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierAllToAll,
                         ::testing::Combine(::testing::Values(2, 3), ::testing::Values(2, 3),
                                            ::testing::Bool()));

}  // namespace
}  // namespace smddp::algo::testing
