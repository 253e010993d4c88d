// SPDX-License-Identifier: Apache-2.0
// Multi-process exchanges over the real libfabric transport (shm, tcp;ofi_rxm and net on 127.0.0.1),
// 2-4 forked ranks: a ring of sizes {0, 1, 4095, 4097, 65539, 4 MiB} with content checks, and
// many outstanding all-to-all messages with distinct full-width tags whose receives are posted in
// shuffled order (tag matching must pair them; the shm tx queue of 1024 forces EAGAIN retries).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "common/tag.h"
#include "mp/fork_ranks.h"
#include "mp/transport_helpers.h"

namespace smddp::test {
namespace {

using TransportExchange = TempDirTest<std::tuple<std::string, int>>;

const std::vector<size_t> kRingSizes = {0, 1, 4095, 4097, 65536 + 3, 4u << 20};

int ringRank(const std::string& dir, const std::string& provider, int rank, int n) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, n, provider);
  int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  size_t count = kRingSizes.size();
  std::vector<std::vector<unsigned char>> out(count), in(count);
  std::vector<Op> ops(2 * count);
  std::vector<Op*> all;
  // Odd messages find their receive already posted; even ones arrive unexpected.
  auto postRecv = [&](size_t i) {
    in[i].assign(kRingSizes[i], 0xEE);
    ops[count + i] = makeOp(OpKind::kRecv, prev, i, in[i].data(), in[i].size());
    t->post(ops[count + i]);
  };
  for (size_t i = 1; i < count; i += 2) postRecv(i);
  for (size_t i = 0; i < count; ++i) {
    out[i].resize(kRingSizes[i]);
    fillPattern(out[i], rank, next, static_cast<int>(i));
    ops[i] = makeOp(OpKind::kSend, next, i, out[i].data(), out[i].size());
    t->post(ops[i]);
  }
  for (size_t i = 0; i < count; i += 2) postRecv(i);
  for (Op& op : ops) all.push_back(&op);
  std::string failure = waitAll(*t, all);
  for (size_t i = 0; i < count && failure.empty(); ++i) {
    if (ops[count + i].received != kRingSizes[i]) {
      failure = "message " + std::to_string(i) + " from rank " + std::to_string(prev) +
                ": received " + std::to_string(ops[count + i].received) + " bytes, expected " +
                std::to_string(kRingSizes[i]);
    } else {
      failure = checkPattern(in[i], in[i].size(), prev, rank, static_cast<int>(i));
    }
  }
  storeBarrier(*store, "end", n);
  return report(rank, failure);
}

TEST_P(TransportExchange, Ring) {
  auto [provider, n] = GetParam();
  std::string dir = dir_;
  EXPECT_EQ(forkRanks(n, kRankLimit, [&](int r) { return ringRank(dir, provider, r, n); }), "");
}

// 400 receives in all per rank. libfabric 1.17 shm takes posted receives and unexpected messages
// from one pool of rx_attr->size (1024) entries, and once it is empty it stops reading its queue,
// so shuffled receives beyond it deadlock inside the provider (seen with 1500; 900 posted plus the
// unexpected ones in flight hung once under load). Posted + unexpected stays below 1024 here.
// Real collectives keep a handful of receives outstanding.
int messagesPerPair(int n) { return 400 / (n - 1); }

// Sizes alternate between inject-sized and larger messages so both send paths are exercised.
size_t tagsMessageBytes(int k) { return (k % 3 == 0) ? 4200 + k : (k * 37) % 60; }
uint64_t tagsTag(int k) {
  // High sequence bits set: the whole 60-bit tag must survive the provider.
  return tag::make(CollectiveKind::kControl, 0xFFFF0000u + static_cast<uint64_t>(k), 3 * k + 1);
}

int tagsRank(const std::string& dir, const std::string& provider, int rank, int n) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, n, provider);
  const int perPeer = messagesPerPair(n);
  std::vector<std::vector<unsigned char>> out(n * perPeer), in(n * perPeer);
  std::vector<Op> sends(n * perPeer), recvs(n * perPeer);
  std::vector<int> recvOrder;  // index peer * perPeer + k, shuffled per rank
  for (int p = 0; p < n; ++p) {
    for (int k = 0; k < perPeer && p != rank; ++k) recvOrder.push_back(p * perPeer + k);
  }
  std::shuffle(recvOrder.begin(), recvOrder.end(), std::mt19937(1234 + rank));
  auto postRecv = [&](int idx) {
    int p = idx / perPeer, k = idx % perPeer;
    in[idx].assign(tagsMessageBytes(k), 0xEE);
    recvs[idx] = makeOp(OpKind::kRecv, p, tagsTag(k), in[idx].data(), in[idx].size());
    t->post(recvs[idx]);
  };
  size_t half = recvOrder.size() / 2;
  for (size_t i = 0; i < half; ++i) postRecv(recvOrder[i]);
  std::vector<Op*> all;
  for (int k = 0; k < perPeer; ++k) {
    for (int p = 0; p < n; ++p) {
      if (p == rank) continue;
      int idx = p * perPeer + k;
      out[idx].resize(tagsMessageBytes(k));
      fillPattern(out[idx], rank, p, k);
      sends[idx] = makeOp(OpKind::kSend, p, tagsTag(k), out[idx].data(), out[idx].size());
      t->post(sends[idx]);
      all.push_back(&sends[idx]);
    }
  }
  for (size_t i = half; i < recvOrder.size(); ++i) postRecv(recvOrder[i]);
  for (int idx : recvOrder) all.push_back(&recvs[idx]);
  std::string failure = waitAll(*t, all);
  for (size_t i = 0; i < recvOrder.size() && failure.empty(); ++i) {
    int idx = recvOrder[i], p = idx / perPeer, k = idx % perPeer;
    if (recvs[idx].received != tagsMessageBytes(k)) {
      failure = "message " + std::to_string(k) + " from rank " + std::to_string(p) + ": got " +
                std::to_string(recvs[idx].received) + " bytes, expected " +
                std::to_string(tagsMessageBytes(k));
    } else {
      failure = checkPattern(in[idx], in[idx].size(), p, rank, k);
    }
  }
  storeBarrier(*store, "end", n);
  return report(rank, failure);
}

TEST_P(TransportExchange, ShuffledTags) {
  auto [provider, n] = GetParam();
  std::string dir = dir_;
  EXPECT_EQ(forkRanks(n, kRankLimit, [&](int r) { return tagsRank(dir, provider, r, n); }), "");
}

INSTANTIATE_TEST_SUITE_P(Providers, TransportExchange,
                         ::testing::Combine(::testing::Values("shm", "tcp", "net"),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace smddp::test
