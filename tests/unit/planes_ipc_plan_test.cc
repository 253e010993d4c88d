// SPDX-License-Identifier: Apache-2.0
// The CUDA IPC plans (planes/smddp/ipc_plan.h), run on host memory by a model of the devices: every
// rank's ops between two barriers form a phase, and the phases of all ranks run together (a rank
// passes barrier b only once every rank enqueued its ops before b). Within a phase, two ranks
// touching the same scratch byte where one writes is a race: the model reports it. Checked: every
// collective's closed-form result over 2-7 ranks, counts that need many chunks and calls one
// after another (phases spanning calls), no race anywhere; every single barrier removed makes a
// race (none is superfluous); a write waits for the area's readers; the barrier count per chunk;
// refused calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "planes/smddp/ipc_plan.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::planes {
namespace {

using Bytes = std::vector<unsigned char>;

constexpr size_t kSlot = 256;  // small areas: every count above 64 floats takes several chunks
constexpr size_t kSmall = 64;

struct Devices {
  int n;
  Bytes scratch;
  explicit Devices(int ranks) : n(ranks), scratch(static_cast<size_t>(ranks) * stride(), 0) {}
  static size_t stride() { return 2 * kSlot + 2 * kSmall; }
  IpcScratch view() {
    return IpcScratch{[this](int r, int a) {
                        const auto k = static_cast<size_t>(a);
                        return reinterpret_cast<char*>(scratch.data()) +
                               static_cast<size_t>(r) * stride() + std::min<size_t>(k, 2) * kSlot +
                               (k > 2 ? kSmall : 0);
                      },
                      kSlot, kSmall};
  }
  bool inScratch(const void* p) const {
    const auto* c = static_cast<const unsigned char*>(p);
    return c >= scratch.data() && c < scratch.data() + scratch.size();
  }
};

struct Access {
  int rank;
  const unsigned char* lo;
  const unsigned char* hi;
  bool write;
};

// Runs every rank's ops phase by phase; returns the first race found ("" for none). `dtype` and
// `op` are those of the reductions.
std::string run(const std::vector<std::vector<IpcOp>>& ops, const Devices& dev, DataType dtype,
                ReduceOp op) {
  std::vector<size_t> at(ops.size(), 0);
  for (int phase = 0;; ++phase) {
    std::vector<Access> seen;
    bool any = false;
    for (size_t r = 0; r < ops.size(); ++r) {
      for (size_t k = at[r]; k < ops[r].size() && ops[r][k].kind != IpcOp::kBarrier; ++k) {
        const IpcOp& o = ops[r][k];
        const size_t bytes = o.kind == IpcOp::kCopy ? o.bytes : o.count * dataTypeSize(dtype);
        auto note = [&](const void* p, bool write) {
          if (!dev.inScratch(p)) return;
          const auto* lo = static_cast<const unsigned char*>(p);
          seen.push_back({static_cast<int>(r), lo, lo + bytes, write});
        };
        if (o.kind == IpcOp::kAverage) {  // in place on dst
          note(o.dst, true);
          continue;
        }
        note(o.dst, true);
        note(o.a, false);
        if (o.kind == IpcOp::kReduce) note(o.b, false);
      }
    }
    for (size_t i = 0; i < seen.size(); ++i) {
      for (size_t j = i + 1; j < seen.size(); ++j) {
        const Access& x = seen[i];
        const Access& y = seen[j];
        if (x.rank != y.rank && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi) {
          return "phase " + std::to_string(phase) + ": ranks " + std::to_string(x.rank) +
                 " and " + std::to_string(y.rank) + " race on scratch byte " +
                 std::to_string(std::max(x.lo, y.lo) - dev.scratch.data());
        }
      }
    }
    for (size_t r = 0; r < ops.size(); ++r) {
      size_t& k = at[r];
      for (; k < ops[r].size() && ops[r][k].kind != IpcOp::kBarrier; ++k) {
        const IpcOp& o = ops[r][k];
        if (o.kind == IpcOp::kCopy) {
          std::memmove(o.dst, o.a, o.bytes);
        } else if (o.kind == IpcOp::kAverage) {
          reduce::finishAverage(dtype, o.dst, o.count, o.divisor);
        } else {
          reduce::reduce(dtype, op, o.dst, o.a, o.b, o.count);
        }
      }
      if (k < ops[r].size()) {
        ++k;  // the barrier
        any = true;
      }
    }
    if (!any) return "";
  }
}

// One call on every rank, with its buffers and the expected output of each rank.
struct Call1 {
  CollectiveKind kind;
  size_t count;
  int root;
  std::vector<std::vector<int64_t>> send, recv, want;  // by rank
};

int64_t v(int r, size_t i) { return r * 1000 + static_cast<int64_t>(i % 997); }

Call1 makeCall(CollectiveKind kind, int n, size_t c, int root) {
  Call1 k{kind, c, root, {}, {}, {}};
  const auto un = static_cast<size_t>(n);
  for (int r = 0; r < n; ++r) {
    std::vector<int64_t> send, recv, want;
    switch (kind) {
      case CollectiveKind::kAllReduce:
      case CollectiveKind::kReduce:
      case CollectiveKind::kBroadcast:
        for (size_t i = 0; i < c; ++i) {
          send.push_back(v(r, i));
          int64_t best = v(0, i);
          for (int s = 1; s < n; ++s) best = std::max(best, v(s, i));
          want.push_back(kind == CollectiveKind::kBroadcast ? v(root, i) : best);
        }
        recv.assign(c, -1);
        if (kind == CollectiveKind::kReduce && r != root) want = recv;
        break;
      case CollectiveKind::kAllGather:
      case CollectiveKind::kGather:
        for (size_t i = 0; i < c; ++i) send.push_back(v(r, i));
        for (size_t i = 0; i < un * c; ++i) want.push_back(v(static_cast<int>(i / c), i % c));
        recv.assign(un * c, -1);
        if (kind == CollectiveKind::kGather && r != root) want = recv;
        break;
      case CollectiveKind::kScatter:
      case CollectiveKind::kReduceScatter:
      case CollectiveKind::kAllToAll:
        for (size_t i = 0; i < un * c; ++i) send.push_back(v(r, i));
        if (kind == CollectiveKind::kScatter && r != root) send.assign(un * c, -2);
        for (size_t i = 0; i < (kind == CollectiveKind::kAllToAll ? un : 1) * c; ++i) {
          const size_t at = static_cast<size_t>(r) * c + i % c;
          if (kind == CollectiveKind::kScatter) {
            want.push_back(v(root, at));
          } else if (kind == CollectiveKind::kAllToAll) {
            want.push_back(v(static_cast<int>(i / c), at));
          } else {
            int64_t best = v(0, at);
            for (int s = 1; s < n; ++s) best = std::max(best, v(s, at));
            want.push_back(best);
          }
        }
        recv.assign(want.size(), -1);
        break;
      default:
        break;
    }
    k.send.push_back(send);
    k.recv.push_back(recv);
    k.want.push_back(want);
  }
  return k;
}

algo::CollectiveArgs argsOf(Call1& k, int r) {
  const bool rooted = Call::rooted(k.kind);
  const bool reduces = Call::reduces(k.kind);
  algo::CollectiveArgs a(Call::of(k.kind, DataType::kInt64, k.count,
                                  reduces ? ReduceOp::kMax : ReduceOp::kSum, rooted ? k.root : -1),
                         k.send[static_cast<size_t>(r)].data(),
                         k.recv[static_cast<size_t>(r)].data());
  if (k.kind == CollectiveKind::kBroadcast && r != k.root) a.send = a.recv;
  return a;
}

constexpr CollectiveKind kKinds[] = {
    CollectiveKind::kAllReduce, CollectiveKind::kBroadcast,     CollectiveKind::kReduce,
    CollectiveKind::kAllGather, CollectiveKind::kGather,        CollectiveKind::kScatter,
    CollectiveKind::kReduceScatter, CollectiveKind::kAllToAll};

// A program of calls (kinds x counts, shuffled), planned on every rank one after the other.
struct Program {
  std::vector<Call1> calls;
  std::vector<std::vector<IpcOp>> ops;  // by rank, every call's ops in order
};

Program plan(Devices& dev, unsigned seed) {
  Program p;
  const int n = dev.n;
  for (CollectiveKind kind : kKinds) {
    for (size_t c : {size_t{1}, size_t{5}, size_t{8}, size_t{33}, size_t{70}}) {
      p.calls.push_back(makeCall(kind, n, c, static_cast<int>(c) % n));
    }
  }
  std::mt19937 rng(seed);
  std::shuffle(p.calls.begin(), p.calls.end(), rng);
  p.ops.resize(static_cast<size_t>(n));
  std::vector<IpcScratchClock> clocks(static_cast<size_t>(n));
  for (Call1& k : p.calls) {
    for (int r = 0; r < n; ++r) {
      const auto ops = planIpc(argsOf(k, r), r, n, dev.view(), clocks[static_cast<size_t>(r)]);
      auto& all = p.ops[static_cast<size_t>(r)];
      all.insert(all.end(), ops.begin(), ops.end());
    }
  }
  return p;
}

TEST(IpcPlan, EveryCollectiveIsRightWithoutARace) {
  for (int n : {2, 3, 5, 7}) {
    for (unsigned seed : {1u, 2u, 3u}) {
      Devices dev(n);
      Program p = plan(dev, seed);
      for (int r = 1; r < n; ++r) {
        ASSERT_EQ(ipcBarriers(p.ops[static_cast<size_t>(r)]), ipcBarriers(p.ops[0]))
            << "world " << n << ": ranks plan different barriers";
      }
      ASSERT_EQ(run(p.ops, dev, DataType::kInt64, ReduceOp::kMax), "") << "world " << n;
      for (const Call1& k : p.calls) {
        for (int r = 0; r < n; ++r) {
          ASSERT_EQ(k.recv[static_cast<size_t>(r)], k.want[static_cast<size_t>(r)])
              << toString(k.kind) << " x " << k.count << " root " << k.root << ", rank " << r
              << " of " << n;
        }
      }
    }
  }
}

TEST(IpcPlan, EveryBarrierIsNeeded) {
  for (int n : {2, 3, 5}) {
    Devices dev(n);
    const Program p = plan(dev, 7);
    const size_t barriers = ipcBarriers(p.ops[0]);
    ASSERT_GT(barriers, p.calls.size());
    for (size_t drop = 0; drop < barriers; ++drop) {
      std::vector<std::vector<IpcOp>> planted = p.ops;
      for (auto& ops : planted) {
        size_t seen = 0;
        for (auto it = ops.begin(); it != ops.end(); ++it) {
          if (it->kind == IpcOp::kBarrier && seen++ == drop) {
            ops.erase(it);
            break;
          }
        }
      }
      EXPECT_NE(run(planted, dev, DataType::kInt64, ReduceOp::kMax), "")
          << "world " << n << ": barrier " << drop << " of " << barriers << " is never needed";
    }
  }
}

// AVG: the rank-order sum divided by the world, the CPU reducer's numerics, on every rank alike
// (all_reduce one-shot and chunked, reduce, reduce_scatter).
TEST(IpcPlan, AverageDividesTheRankOrderSum) {
  for (int n : {2, 3, 7}) {
    for (CollectiveKind kind :
         {CollectiveKind::kAllReduce, CollectiveKind::kReduce, CollectiveKind::kReduceScatter}) {
      for (size_t c : {size_t{3}, size_t{100}}) {
        Devices dev(n);
        const auto un = static_cast<size_t>(n);
        const size_t inCount = kind == CollectiveKind::kReduceScatter ? c * un : c;
        std::vector<std::vector<double>> send(un), recv(un, std::vector<double>(c, -1.0));
        for (size_t r = 0; r < un; ++r) {
          for (size_t i = 0; i < inCount; ++i) send[r].push_back(0.1 * static_cast<double>(r + 1) + 0.01 * i);
        }
        std::vector<std::vector<IpcOp>> ops(un);
        std::vector<IpcScratchClock> clocks(un);
        for (int r = 0; r < n; ++r) {
          algo::CollectiveArgs a(Call::of(kind, DataType::kFloat64, c, ReduceOp::kAvg,
                                          kind == CollectiveKind::kReduce ? n - 1 : -1),
                                 send[static_cast<size_t>(r)].data(),
                                 recv[static_cast<size_t>(r)].data());
          ops[static_cast<size_t>(r)] = planIpc(a, r, n, dev.view(), clocks[static_cast<size_t>(r)]);
        }
        ASSERT_EQ(run(ops, dev, DataType::kFloat64, ReduceOp::kAvg), "");
        for (size_t r = 0; r < un; ++r) {
          if (kind == CollectiveKind::kReduce && r + 1 != un) continue;
          const size_t block = kind == CollectiveKind::kReduceScatter ? r * c : 0;
          for (size_t i = 0; i < c; ++i) {
            double sum = send[0][block + i];
            for (size_t q = 1; q < un; ++q) sum += send[q][block + i];
            ASSERT_EQ(recv[r][i], sum / static_cast<double>(n))
                << toString(kind) << " x " << c << " rank " << r << " of " << n << " [" << i << "]";
          }
        }
      }
    }
  }
}

size_t barriersOf(CollectiveKind kind, size_t count, int n, IpcScratchClock& clock) {
  Devices dev(n);
  Call1 k = makeCall(kind, n, count, 0);
  return ipcBarriers(planIpc(argsOf(k, 0), 0, n, dev.view(), clock));
}

TEST(IpcPlan, OneBarrierPerChunkAndNoneBetweenCalls) {
  IpcScratchClock clock;
  EXPECT_EQ(barriersOf(CollectiveKind::kAllReduce, 8, 4, clock), 1u);   // one-shot: 64 B
  EXPECT_EQ(barriersOf(CollectiveKind::kAllReduce, 8, 4, clock), 1u);   // the other small area
  EXPECT_EQ(barriersOf(CollectiveKind::kAllReduce, 96, 4, clock), 6u);  // 3 chunks of 32
  EXPECT_EQ(barriersOf(CollectiveKind::kAllGather, 96, 4, clock), 3u);
  EXPECT_EQ(barriersOf(CollectiveKind::kBroadcast, 32, 4, clock), 1u);
  EXPECT_EQ(barriersOf(CollectiveKind::kReduceScatter, 8, 4, clock), 1u);  // 4 x 8 fit at once
  EXPECT_EQ(barriersOf(CollectiveKind::kAllToAll, 16, 4, clock), 2u);      // 8 per block a chunk
  EXPECT_EQ(clock.barriers, 15u);
}

// The chunks alternate between the two large areas, so the previous chunk's readers are always past
// a barrier; when both areas are still being read (the clock says so), a write waits for one.
TEST(IpcPlan, AWriteWaitsUntilTheAreasReadersPassedABarrier) {
  Devices dev(3);
  IpcScratchClock clock;
  clock.barriers = 5;
  clock.freeAt[0] = clock.freeAt[1] = 6;
  Call1 k = makeCall(CollectiveKind::kAllGather, 3, 4, 0);
  const auto ops = planIpc(argsOf(k, 1), 1, 3, dev.view(), clock);
  size_t firstBarrier = ops.size(), firstWrite = ops.size();
  for (size_t i = ops.size(); i-- > 0;) {
    if (ops[i].kind == IpcOp::kBarrier) firstBarrier = i;
    if (ops[i].kind != IpcOp::kBarrier && dev.inScratch(ops[i].dst)) firstWrite = i;
  }
  ASSERT_LT(firstWrite, ops.size());
  EXPECT_LT(firstBarrier, firstWrite);
  EXPECT_EQ(ipcBarriers(ops), 2u);
  EXPECT_EQ(clock.barriers, 7u);
}

TEST(IpcPlan, RefusesWhatHasNoIpcForm) {
  Devices dev(3);
  IpcScratchClock clock;
  int64_t x[8] = {};
  auto refused = [&](const algo::CollectiveArgs& a, int size) {
    try {
      planIpc(a, 0, size, dev.view(), clock);
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
      return true;
    }
    return false;
  };
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kAllReduce, DataType::kInt64, 0), x, x}, 3));
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kAllReduce, DataType::kInt64, 8), x, x}, 1));
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kBarrier, DataType::kUInt8, 0), x, x}, 3));
  EXPECT_EQ(clock.barriers, 0u);  // nothing planned, nothing counted
  algo::CollectiveArgs big(Call::of(CollectiveKind::kAllToAll, DataType::kInt64, 8), x, x);
  EXPECT_TRUE(ipcFits(big, 32, kSlot));
  EXPECT_FALSE(ipcFits(big, 33, kSlot));
  EXPECT_TRUE(ipcFits({Call::of(CollectiveKind::kAllGather, DataType::kInt64, 8), x, x}, 33, kSlot));
}

}  // namespace
}  // namespace smddp::planes
