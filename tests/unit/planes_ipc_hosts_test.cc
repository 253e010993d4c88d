// SPDX-License-Identifier: Apache-2.0
// The CUDA IPC plans across hosts (planes/smddp/ipc_plan.h: planIpcAcrossHosts), run on host memory
// by a model of H hosts x L devices: each rank runs its ops up to its next host step; a barrier
// moves the host's ranks to the next epoch together; an exchange is carried out among each cross
// group (the ranks of one local index, one per host, in host order) on their pinned buffers and
// synchronizes nobody on the host. Two ranks of a host touching the same scratch byte in the same
// epoch where one writes is a race; touching another host's scratch is an error. Checked: the
// closed forms of all_reduce, reduce_scatter and all_gather (SUM exact on int64, AVG on float64
// in the plan's order) over hosts of 2-3 ranks, consecutive and interleaved rank numbers, counts
// from one element to many chunks, calls one after another; every barrier is needed; only the
// rank's share reaches pinned memory; refused calls.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "planes/smddp/ipc_plan.h"
#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::planes {
namespace {

using Bytes = std::vector<unsigned char>;
constexpr size_t kSlot = 256;
constexpr size_t kSmall = 64;
constexpr size_t kStride = 2 * kSlot + 2 * kSmall;

struct Layout {
  std::vector<std::vector<int>> ranksOf;
  int n() const { return static_cast<int>(ranksOf.size() * ranksOf[0].size()); }
  IpcHosts of(int rank) const {
    IpcHosts h{ranksOf, 0, 0};
    for (size_t g = 0; g < ranksOf.size(); ++g) {
      for (size_t l = 0; l < ranksOf[g].size(); ++l) {
        if (ranksOf[g][l] == rank) h = IpcHosts{ranksOf, static_cast<int>(g), static_cast<int>(l)};
      }
    }
    return h;
  }
};

Layout layout(int hosts, int perHost, bool interleaved) {
  Layout L;
  L.ranksOf.resize(static_cast<size_t>(hosts));
  for (int r = 0; r < hosts * perHost; ++r) {
    L.ranksOf[static_cast<size_t>(interleaved ? r % hosts : r / perHost)].push_back(r);
  }
  return L;
}

// Every rank's scratch (by rank number), its pinned buffers and its ops.
struct Model {
  Layout lay;
  Bytes scratch;
  std::vector<std::vector<IpcOp>> ops;                  // by rank
  std::vector<IpcScratchClock> clocks;                  // by rank
  std::vector<std::vector<std::unique_ptr<Bytes>>> pinned;  // by rank, one per call
  DataType dtype;
  explicit Model(Layout l, DataType dt)
      : lay(std::move(l)),
        scratch(static_cast<size_t>(lay.n()) * kStride, 0),
        ops(static_cast<size_t>(lay.n())),
        clocks(static_cast<size_t>(lay.n())),
        pinned(static_cast<size_t>(lay.n())),
        dtype(dt) {}

  // Rank `rank`'s view: local index l's areas are those of the rank at l on its host.
  IpcScratch view(int rank) {
    const IpcHosts h = lay.of(rank);
    const std::vector<int> host = lay.ranksOf[static_cast<size_t>(h.host)];
    return IpcScratch{[this, host](int l, int a) {
                        const auto k = static_cast<size_t>(a);
                        return reinterpret_cast<char*>(scratch.data()) +
                               static_cast<size_t>(host[static_cast<size_t>(l)]) * kStride +
                               std::min<size_t>(k, 2) * kSlot + (k > 2 ? kSmall : 0);
                      },
                      kSlot, kSmall};
  }
  void plan(const algo::CollectiveArgs& args, int rank) {
    const IpcHosts h = lay.of(rank);
    const IpcScratch s = view(rank);
    auto& mine = pinned[static_cast<size_t>(rank)];
    mine.push_back(std::make_unique<Bytes>(ipcPinnedBytes(args, h, s), 0));
    const auto o = planIpcAcrossHosts(args, h, s, clocks[static_cast<size_t>(rank)],
                                      reinterpret_cast<char*>(mine.back()->data()));
    ops[static_cast<size_t>(rank)].insert(ops[static_cast<size_t>(rank)].end(), o.begin(), o.end());
  }
  int ownerOf(const void* p) const {
    const auto* c = static_cast<const unsigned char*>(p);
    if (c < scratch.data() || c >= scratch.data() + scratch.size()) return -1;
    return static_cast<int>(static_cast<size_t>(c - scratch.data()) / kStride);
  }
};

struct Access {
  int rank;
  const unsigned char* lo;
  const unsigned char* hi;
  bool write;
};

// The cross group's collective of one exchange step (ops[r] of each member r, host order).
void exchange(const Model& m, const std::vector<const IpcOp*>& step, ReduceOp op) {
  const size_t es = dataTypeSize(m.dtype);
  const size_t count = step[0]->count;
  const size_t H = step.size();
  switch (step[0]->step) {
    case CollectiveKind::kAllReduce: {
      Bytes acc(count * es);
      std::memcpy(acc.data(), step[0]->a, acc.size());
      for (size_t g = 1; g < H; ++g) reduce::reduce(m.dtype, op, acc.data(), acc.data(), step[g]->a, count);
      for (const IpcOp* s : step) std::memcpy(s->dst, acc.data(), acc.size());
      break;
    }
    case CollectiveKind::kAllGather:
      for (const IpcOp* s : step) {
        for (size_t g = 0; g < H; ++g) {
          std::memcpy(static_cast<char*>(s->dst) + g * count * es, step[g]->a, count * es);
        }
      }
      break;
    default: {  // reduce_scatter: member g gets block g, summed in host order
      for (size_t g = 0; g < H; ++g) {
        Bytes acc(count * es);
        std::memcpy(acc.data(), static_cast<const char*>(step[0]->a) + g * count * es, acc.size());
        for (size_t k = 1; k < H; ++k) {
          reduce::reduce(m.dtype, op, acc.data(), acc.data(),
                         static_cast<const char*>(step[k]->a) + g * count * es, count);
        }
        std::memcpy(step[g]->dst, acc.data(), acc.size());
      }
    }
  }
}

// Runs every rank's ops; returns the first race or inconsistency ("" for none). `op`: the
// reductions' (the device reduces AVG as SUM).
std::string run(const Model& m, const std::vector<std::vector<IpcOp>>& ops, ReduceOp op) {
  const int n = m.lay.n();
  std::vector<size_t> at(static_cast<size_t>(n), 0);
  const ReduceOp summed = op == ReduceOp::kAvg ? ReduceOp::kSum : op;
  std::vector<Access> seen;  // this epoch's, across exchanges
  auto race = [&](int epoch) -> std::string {
    for (size_t i = 0; i < seen.size(); ++i) {
      for (size_t j = i + 1; j < seen.size(); ++j) {
        const Access& x = seen[i];
        const Access& y = seen[j];
        if (x.rank != y.rank && (x.write || y.write) && x.lo < y.hi && y.lo < x.hi) {
          return "epoch " + std::to_string(epoch) + ": ranks " + std::to_string(x.rank) + " and " +
                 std::to_string(y.rank) + " race on a scratch byte";
        }
      }
    }
    seen.clear();
    return "";
  };
  for (int epoch = 0, steps = 0;; ++steps) {
    for (int r = 0; r < n; ++r) {
      const int host = m.lay.of(r).host;
      size_t& k = at[static_cast<size_t>(r)];
      for (; k < ops[static_cast<size_t>(r)].size(); ++k) {
        const IpcOp& o = ops[static_cast<size_t>(r)][k];
        if (o.kind == IpcOp::kBarrier || o.kind == IpcOp::kExchange) break;
        const size_t bytes = o.kind == IpcOp::kCopy ? o.bytes : o.count * dataTypeSize(m.dtype);
        for (auto [p, write] : {std::pair<const void*, bool>{o.dst, true}, {o.a, false}, {o.b, false}}) {
          if (p == nullptr || m.ownerOf(p) < 0) continue;
          if (m.lay.of(m.ownerOf(p)).host != host) {
            return "rank " + std::to_string(r) + " touches rank " + std::to_string(m.ownerOf(p)) +
                   "'s scratch on another host";
          }
          const auto* lo = static_cast<const unsigned char*>(p);
          seen.push_back({r, lo, lo + bytes, write || o.kind == IpcOp::kAverage});
        }
        if (o.kind == IpcOp::kCopy) {
          std::memmove(o.dst, o.a, o.bytes);
        } else if (o.kind == IpcOp::kAverage) {
          reduce::finishAverage(m.dtype, o.dst, o.count, o.divisor);
        } else {
          reduce::reduce(m.dtype, summed, o.dst, o.a, o.b, o.count);
        }
      }
    }
    // Every rank is at a host step (or done): all the same kind.
    const auto& first = ops[0];
    const bool done = at[0] == first.size();
    for (int r = 0; r < n; ++r) {
      const auto& mine = ops[static_cast<size_t>(r)];
      const size_t k = at[static_cast<size_t>(r)];
      if ((k == mine.size()) != done || (!done && mine[k].kind != first[at[0]].kind)) {
        return "step " + std::to_string(steps) + ": rank " + std::to_string(r) +
               " plans a different host step than rank 0";
      }
    }
    if (done) return race(epoch);
    if (first[at[0]].kind == IpcOp::kBarrier) {
      const std::string why = race(epoch++);  // the host's ranks pass the barrier together
      if (!why.empty()) return why;
    } else {
      for (const auto& members : m.lay.ranksOf[0]) {  // one cross group per local index
        const int l = m.lay.of(members).local;
        std::vector<const IpcOp*> step;
        for (const auto& host : m.lay.ranksOf) {
          const int r = host[static_cast<size_t>(l)];
          step.push_back(&ops[static_cast<size_t>(r)][at[static_cast<size_t>(r)]]);
        }
        for (const IpcOp* s : step) {
          if (s->step != step[0]->step || s->count != step[0]->count) {
            return "step " + std::to_string(steps) + ": a cross group's exchanges differ";
          }
        }
        exchange(m, step, summed);
      }
    }
    for (auto& k : at) ++k;
  }
}

int64_t v(int r, size_t i) { return r * 1000 + static_cast<int64_t>(i % 997); }

// One call of every rank on int64 SUM, its buffers and the expected outputs.
struct Call1 {
  CollectiveKind kind;
  size_t count;
  std::vector<std::vector<int64_t>> send, recv, want;
};

Call1 makeCall(CollectiveKind kind, int n, size_t c) {
  Call1 k{kind, c, {}, {}, {}};
  const auto un = static_cast<size_t>(n);
  for (int r = 0; r < n; ++r) {
    std::vector<int64_t> send, want;
    const size_t inCount = kind == CollectiveKind::kReduceScatter ? un * c : c;
    for (size_t i = 0; i < inCount; ++i) send.push_back(v(r, i));
    const size_t outCount = kind == CollectiveKind::kAllGather ? un * c : c;
    for (size_t i = 0; i < outCount; ++i) {
      if (kind == CollectiveKind::kAllGather) {
        want.push_back(v(static_cast<int>(i / c), i % c));
        continue;
      }
      const size_t at = kind == CollectiveKind::kReduceScatter ? static_cast<size_t>(r) * c + i : i;
      int64_t sum = 0;
      for (int s = 0; s < n; ++s) sum += v(s, at);
      want.push_back(sum);
    }
    k.send.push_back(send);
    k.recv.emplace_back(outCount, -1);
    k.want.push_back(want);
  }
  return k;
}

algo::CollectiveArgs argsOf(Call1& k, int r, bool inPlace) {
  auto& recv = k.recv[static_cast<size_t>(r)];
  algo::CollectiveArgs a(Call::of(k.kind, DataType::kInt64, k.count), k.send[static_cast<size_t>(r)].data(),
                         recv.data());
  if (inPlace && k.kind == CollectiveKind::kAllReduce) {
    recv = k.send[static_cast<size_t>(r)];
    a.send = recv.data();
  }
  return a;
}

constexpr CollectiveKind kKinds[] = {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter,
                                     CollectiveKind::kAllGather};

// Every kind x count, one after another on every rank.
std::vector<Call1> planAll(Model& m) {
  std::vector<Call1> calls;
  for (size_t c : {size_t{1}, size_t{3}, size_t{8}, size_t{33}, size_t{70}, size_t{200}}) {
    for (CollectiveKind kind : kKinds) calls.push_back(makeCall(kind, m.lay.n(), c));
  }
  for (size_t i = 0; i < calls.size(); ++i) {
    for (int r = 0; r < m.lay.n(); ++r) m.plan(argsOf(calls[i], r, i % 2 == 1), r);
  }
  return calls;
}

std::vector<Layout> layouts() {
  return {layout(2, 2, false), layout(2, 2, true), layout(3, 2, false), layout(2, 3, true),
          layout(3, 3, false)};
}

TEST(IpcHostsPlan, EveryCollectiveIsRightWithoutARace) {
  for (const Layout& lay : layouts()) {
    const std::string at = std::to_string(lay.ranksOf.size()) + " hosts x " +
                           std::to_string(lay.ranksOf[0].size()) + " (rank 1 on host " +
                           std::to_string(lay.of(1).host) + ")";
    Model m(lay, DataType::kInt64);
    std::vector<Call1> calls = planAll(m);
    ASSERT_EQ(run(m, m.ops, ReduceOp::kSum), "") << at;
    for (const Call1& k : calls) {
      for (int r = 0; r < lay.n(); ++r) {
        ASSERT_EQ(k.recv[static_cast<size_t>(r)], k.want[static_cast<size_t>(r)])
            << toString(k.kind) << " x " << k.count << ", rank " << r << ", " << at;
      }
    }
  }
}

TEST(IpcHostsPlan, EveryBarrierIsNeeded) {
  for (const Layout& lay : {layout(2, 2, false), layout(2, 3, true)}) {
    Model m(lay, DataType::kInt64);
    const std::vector<Call1> calls = planAll(m);
    const size_t barriers = ipcBarriers(m.ops[0]);
    ASSERT_GT(barriers, calls.size());
    for (size_t drop = 0; drop < barriers; ++drop) {
      auto planted = m.ops;
      for (auto& ops : planted) {
        size_t seen = 0;
        for (auto it = ops.begin(); it != ops.end(); ++it) {
          if (it->kind == IpcOp::kBarrier && seen++ == drop) {
            ops.erase(it);
            break;
          }
        }
      }
      EXPECT_NE(run(m, planted, ReduceOp::kSum), "") << "barrier " << drop << " of " << barriers;
    }
  }
}

// AVG: the host's ranks summed in local order, the hosts in host order, divided by the world,
// on every rank alike.
TEST(IpcHostsPlan, AverageDividesOnceByTheWorld) {
  const Layout lay = layout(2, 3, false);
  const int n = lay.n();
  for (CollectiveKind kind : {CollectiveKind::kAllReduce, CollectiveKind::kReduceScatter}) {
    for (size_t c : {size_t{5}, size_t{100}}) {
      Model m(lay, DataType::kFloat64);
      const size_t inCount = kind == CollectiveKind::kReduceScatter ? c * static_cast<size_t>(n) : c;
      std::vector<std::vector<double>> send(static_cast<size_t>(n)),
          recv(static_cast<size_t>(n), std::vector<double>(c, -1.0));
      for (int r = 0; r < n; ++r) {
        for (size_t i = 0; i < inCount; ++i) send[static_cast<size_t>(r)].push_back(0.1 * (r + 1) + 0.013 * i);
      }
      for (int r = 0; r < n; ++r) {
        m.plan(algo::CollectiveArgs(Call::of(kind, DataType::kFloat64, c, ReduceOp::kAvg),
                                    send[static_cast<size_t>(r)].data(), recv[static_cast<size_t>(r)].data()),
               r);
      }
      ASSERT_EQ(run(m, m.ops, ReduceOp::kAvg), "");
      for (int r = 0; r < n; ++r) {
        const size_t block = kind == CollectiveKind::kReduceScatter ? static_cast<size_t>(r) * c : 0;
        for (size_t i = 0; i < c; ++i) {
          double total = 0;
          for (size_t g = 0; g < lay.ranksOf.size(); ++g) {
            double host = 0;
            for (size_t l = 0; l < lay.ranksOf[g].size(); ++l) {
              const double x = send[static_cast<size_t>(lay.ranksOf[g][l])][block + i];
              host = l == 0 ? x : host + x;
            }
            total = g == 0 ? host : total + host;
          }
          ASSERT_EQ(recv[static_cast<size_t>(r)][i], total / n)
              << toString(kind) << " x " << c << " rank " << r << " [" << i << "]";
        }
      }
    }
  }
}

// Only the rank's share crosses: its exchanges carry 1/L of an all_reduce, H of n blocks of a
// reduce_scatter, its own block of an all_gather.
TEST(IpcHostsPlan, OnlyTheRanksShareIsExchanged) {
  const Layout lay = layout(2, 4, false);
  Model m(lay, DataType::kInt64);
  const size_t c = 1000;
  for (CollectiveKind kind : kKinds) {
    Call1 k = makeCall(kind, lay.n(), c);
    const size_t before = m.ops[5].size();
    m.plan(argsOf(k, 5, false), 5);
    size_t sent = 0;
    for (size_t i = before; i < m.ops[5].size(); ++i) {
      const IpcOp& o = m.ops[5][i];
      if (o.kind != IpcOp::kExchange) continue;
      EXPECT_EQ(o.step, kind);
      sent += kind == CollectiveKind::kReduceScatter ? 2 * o.count : o.count;  // H = 2 blocks
    }
    EXPECT_EQ(sent, kind == CollectiveKind::kAllReduce ? c / 4 : kind == CollectiveKind::kAllGather ? c : 2 * c)
        << toString(kind);
  }
}

TEST(IpcHostsPlan, RefusesWhatHasNoFormAcrossHosts) {
  const Layout lay = layout(2, 2, false);
  Model m(lay, DataType::kInt64);
  int64_t x[64] = {};
  auto refused = [&](const algo::CollectiveArgs& a, const IpcHosts& h) {
    try {
      IpcScratchClock clock;
      planIpcAcrossHosts(a, h, m.view(0), clock, reinterpret_cast<char*>(x));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return true;
    }
    return false;
  };
  const IpcHosts h = lay.of(0);
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kBroadcast, DataType::kInt64, 4, ReduceOp::kSum, 0), x, x}, h));
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kAllReduce, DataType::kInt64, 0), x, x}, h));
  IpcHosts uneven = h;
  uneven.ranksOf[1].pop_back();
  EXPECT_TRUE(refused({Call::of(CollectiveKind::kAllReduce, DataType::kInt64, 4), x, x}, uneven));
  EXPECT_TRUE(hasIpcFormAcrossHosts(CollectiveKind::kAllGather));
  EXPECT_FALSE(hasIpcFormAcrossHosts(CollectiveKind::kAllToAll));
  // reduce_scatter stages a slice of every rank's block per chunk: n elements must fit.
  const Layout big = layout(2, 17, false);
  algo::CollectiveArgs rs(Call::of(CollectiveKind::kReduceScatter, DataType::kInt64, 4), x, x);
  EXPECT_TRUE(ipcFitsAcrossHosts(rs, layout(2, 16, false).of(0), kSlot));
  EXPECT_FALSE(ipcFitsAcrossHosts(rs, big.of(0), kSlot));
}

}  // namespace
}  // namespace smddp::planes
