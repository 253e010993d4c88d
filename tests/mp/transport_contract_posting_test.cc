// SPDX-License-Identifier: Apache-2.0
// The transport contract, posting and progress, over every transport (transport_contract.h): a
// ring of sizes {0, 1, 4095, 4097, 65539, 4 MiB} with content checks on 2-4 ranks; many
// outstanding all-to-all messages with distinct full-width tags whose receives are posted in
// shuffled order (tag matching must pair them; libfabric shm's tx queue of 1024 forces EAGAIN
// retries); progress() counting each finished op once; receives from any peer naming the source.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <set>

#include "common/tag.h"
#include "mp/transport_contract.h"

namespace smddp::test {
namespace {

const std::vector<size_t> kRingSizes = {0, 1, 4095, 4097, 65536 + 3, 4u << 20};

std::string ringRank(ContractRank& r) {
  Transport& t = *r.t;
  const int n = r.size, rank = r.rank, next = (rank + 1) % n, prev = (rank + n - 1) % n;
  size_t count = kRingSizes.size();
  std::vector<std::vector<unsigned char>> out(count), in(count);
  std::vector<Op> ops(2 * count);
  std::vector<Op*> all;
  // Odd messages find their receive already posted; even ones arrive unexpected.
  auto postRecv = [&](size_t i) {
    in[i].assign(kRingSizes[i], 0xEE);
    ops[count + i] = makeOp(OpKind::kRecv, prev, i, in[i].data(), in[i].size());
    t.post(ops[count + i]);
  };
  for (size_t i = 1; i < count; i += 2) postRecv(i);
  for (size_t i = 0; i < count; ++i) {
    out[i].resize(kRingSizes[i]);
    fillPattern(out[i], rank, next, static_cast<int>(i));
    ops[i] = makeOp(OpKind::kSend, next, i, out[i].data(), out[i].size());
    t.post(ops[i]);
  }
  for (size_t i = 0; i < count; i += 2) postRecv(i);
  for (Op& op : ops) all.push_back(&op);
  std::string failure = waitAll(t, all);
  for (size_t i = 0; i < count && failure.empty(); ++i) {
    if (ops[count + i].received != kRingSizes[i]) {
      failure = "message " + std::to_string(i) + " from rank " + std::to_string(prev) +
                ": received " + std::to_string(ops[count + i].received) + " bytes, expected " +
                std::to_string(kRingSizes[i]);
    } else if (ops[count + i].source != prev) {
      failure = "message " + std::to_string(i) + " from rank " + std::to_string(prev) +
                " reports source " + std::to_string(ops[count + i].source);
    } else {
      failure = checkPattern(in[i], in[i].size(), prev, rank, static_cast<int>(i));
    }
  }
  storeBarrier(r.store, "end", n);
  return failure;
}

TEST_P(TransportContractRanks, Ring) { EXPECT_EQ(run(ringRank), ""); }

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

std::string tagsRank(ContractRank& r) {
  Transport& t = *r.t;
  const int n = r.size, rank = r.rank, perPeer = messagesPerPair(n);
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
    t.post(recvs[idx]);
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
      t.post(sends[idx]);
      all.push_back(&sends[idx]);
    }
  }
  for (size_t i = half; i < recvOrder.size(); ++i) postRecv(recvOrder[i]);
  for (int idx : recvOrder) all.push_back(&recvs[idx]);
  std::string failure = waitAll(t, all);
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
  storeBarrier(r.store, "end", n);
  return failure;
}

TEST_P(TransportContractRanks, ShuffledTags) { EXPECT_EQ(run(tagsRank), ""); }

// Each rank posts two receives and two sends (inject-sized and rendezvous-sized) to the other:
// the sum of progress()'s returns is 4 once all four finished, and stays 4 (nothing is counted
// twice, and an idle transport reports 0).
std::string progressRank(ContractRank& r) {
  Transport& t = *r.t;
  const int peer = 1 - r.rank;
  std::vector<unsigned char> small(16), big(100000), smallIn(16, 0xEE), bigIn(100000, 0xEE);
  fillPattern(small, r.rank, peer, 0);
  fillPattern(big, r.rank, peer, 1);
  std::string failure;
  if (int idle = t.progress(); idle != 0) {
    failure = "an idle progress() returned " + std::to_string(idle);
  }
  Op ops[4] = {makeOp(OpKind::kRecv, peer, 1, smallIn.data(), smallIn.size()),
               makeOp(OpKind::kRecv, peer, 2, bigIn.data(), bigIn.size()),
               makeOp(OpKind::kSend, peer, 1, small.data(), small.size()),
               makeOp(OpKind::kSend, peer, 2, big.data(), big.size())};
  for (Op& op : ops) t.post(op);
  int counted = 0;
  auto deadline = Clock::now() + kWaitLimit;
  auto allFinished = [&] {
    return std::all_of(std::begin(ops), std::end(ops), [](const Op& op) { return op.finished(); });
  };
  while (!allFinished() && Clock::now() < deadline) {
    counted += t.progress();
    std::this_thread::yield();
  }
  for (int i = 0; i < 20; ++i) counted += t.progress();
  for (const Op& op : ops) {
    if (failure.empty() && !op.done()) failure = "op unfinished or failed: " + op.error;
  }
  if (failure.empty() && counted != 4) {
    failure = "progress() counted " + std::to_string(counted) + " finished ops, expected 4";
  }
  if (failure.empty()) failure = checkPattern(smallIn, smallIn.size(), peer, r.rank, 0);
  if (failure.empty()) failure = checkPattern(bigIn, bigIn.size(), peer, r.rank, 1);
  storeBarrier(r.store, "end", 2);
  return failure;
}

TEST_P(TransportContract, ProgressCountsEachFinishedOpOnce) {
  EXPECT_EQ(run(2, progressRank), "");
}

// Rank 0 posts two receives from any peer; ranks 1 and 2 send one message each with that tag:
// each receive names its sender, and each sender is named once.
std::string anyPeerRank(ContractRank& r) {
  Transport& t = *r.t;
  constexpr uint64_t kTag = 0x0abc000000000077ull;
  constexpr size_t kBytes = 64;
  std::string failure;
  if (r.rank == 0) {
    std::vector<unsigned char> in[2] = {std::vector<unsigned char>(kBytes, 0xEE),
                                        std::vector<unsigned char>(kBytes, 0xEE)};
    Op recvs[2] = {makeOp(OpKind::kRecv, transport::kAnyPeer, kTag, in[0].data(), kBytes),
                   makeOp(OpKind::kRecv, transport::kAnyPeer, kTag, in[1].data(), kBytes)};
    for (Op& op : recvs) t.post(op);
    failure = waitAll(t, {&recvs[0], &recvs[1]});
    std::set<int> sources;
    for (int i = 0; i < 2 && failure.empty(); ++i) {
      sources.insert(recvs[i].source);
      if (recvs[i].source != 1 && recvs[i].source != 2) {
        failure = "a receive from any peer reports source " + std::to_string(recvs[i].source);
      } else if (recvs[i].received != kBytes) {
        failure = "received " + std::to_string(recvs[i].received) + " bytes";
      } else {
        failure = checkPattern(in[i], kBytes, recvs[i].source, 0, 0);
      }
    }
    if (failure.empty() && sources.size() != 2) failure = "one sender was reported twice";
  } else {
    std::vector<unsigned char> out(kBytes);
    fillPattern(out, r.rank, 0, 0);
    Op send = makeOp(OpKind::kSend, 0, kTag, out.data(), out.size());
    t.post(send);
    failure = waitAll(t, {&send});
  }
  storeBarrier(r.store, "end", 3);
  return failure;
}

TEST_P(TransportContract, AnyPeerReceiveNamesTheSource) { EXPECT_EQ(run(3, anyPeerRank), ""); }

}  // namespace
}  // namespace smddp::test
