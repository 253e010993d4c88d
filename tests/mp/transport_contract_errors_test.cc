// SPDX-License-Identifier: Apache-2.0
// The transport contract, its error paths, over every transport (transport_contract.h): a
// cancelled receive does not consume the message meant for a later one, a receive too small for
// its message fails with an error naming the sizes (and the transport goes on working), and a
// peer that is gone is reported by deadPeer() and peerGone().
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/logging.h"
#include "mp/transport_contract.h"

namespace smddp::test {
namespace {

constexpr uint64_t kTag = 0x0abc000000000042ull;

std::string cancelRank(ContractRank& r) {
  Transport& t = *r.t;
  std::string failure;
  std::vector<unsigned char> msg(5000);
  if (r.rank == 1) {
    r.store.get("cancelled", kWaitLimit);  // sent only after rank 0 withdrew its first receive
    fillPattern(msg, 1, 0, 0);
    Op send = makeOp(OpKind::kSend, 0, kTag, msg.data(), msg.size());
    t.post(send);
    failure = waitAll(t, {&send});
  } else {
    std::vector<unsigned char> first(5000, 0xEE), second(5000, 0xEE);
    Op withdrawn = makeOp(OpKind::kRecv, 1, kTag, first.data(), first.size());
    t.post(withdrawn);
    t.progress();
    if (!t.cancel(withdrawn)) failure = "cancel of a pending recv returned false";
    if (withdrawn.state == transport::OpState::kPending) failure = "op still pending after cancel";
    if (withdrawn.done()) failure = "a recv nobody sent to completed";
    r.store.set("cancelled", "");
    Op recv = makeOp(OpKind::kRecv, 1, kTag, second.data(), second.size());
    t.post(recv);
    if (failure.empty()) failure = waitAll(t, {&recv});
    if (failure.empty()) failure = checkPattern(second, second.size(), 1, 0, 0);
    for (size_t j = 0; j < first.size() && failure.empty(); ++j) {
      if (first[j] != 0xEE) failure = "cancelled recv buffer written at byte " + std::to_string(j);
    }
  }
  storeBarrier(r.store, "end", 2);
  return failure;
}

TEST_P(TransportContract, CancelledRecvLeavesMessageForTheNext) {
  EXPECT_EQ(run(2, cancelRank), "");
}

// The message truncated is one the transport truncates cleanly (ContractTransport's
// truncatedBytes: libfabric 1.17's shm and tcp;ofi_rxm each have a size that loses messages or
// hangs). Every transport still proves: error, sizes named, no crash, the next message arrives.
std::string truncationRank(ContractRank& r, const ContractTransport& kind) {
  Transport& t = *r.t;
  std::string failure;
  if (r.rank == 1) {
    std::vector<unsigned char> big(kind.truncatedBytes), small(10);
    fillPattern(big, 1, 0, 0);
    fillPattern(small, 1, 0, 1);
    Op a = makeOp(OpKind::kSend, 0, kTag, big.data(), big.size());
    Op b = makeOp(OpKind::kSend, 0, kTag + 1, small.data(), small.size());
    t.post(a);
    t.post(b);
    // The sender of a truncated message may see success or an error; it must finish either way.
    auto deadline = Clock::now() + kWaitLimit;
    while (!(a.finished() && b.finished()) && Clock::now() < deadline) t.progress();
    if (!a.finished() || !b.done()) failure = "sends unfinished: " + a.error + " / " + b.error;
    if (a.failed()) std::fprintf(stderr, "[%s] sender of truncated message: %s\n",
                                 kind.name.c_str(), a.error.c_str());
  } else {
    std::vector<unsigned char> tooSmall(100, 0xEE), next(10, 0xEE);
    Op r1 = makeOp(OpKind::kRecv, 1, kTag, tooSmall.data(), tooSmall.size());
    Op r2 = makeOp(OpKind::kRecv, 1, kTag + 1, next.data(), next.size());
    t.post(r1);
    t.post(r2);
    std::string wait = waitAll(t, {&r1});
    std::fprintf(stderr, "[%s] truncated recv: %s\n", kind.name.c_str(), r1.error.c_str());
    if (!r1.failed()) {
      failure = "a " + std::to_string(kind.truncatedBytes) +
                "-byte message into a 100-byte recv did not fail";
    }
    for (const std::string& word : kind.truncationWords) {
      if (failure.empty() && r1.error.find(word) == std::string::npos) {
        failure = "truncation error does not say '" + word + "': " + r1.error;
      }
    }
    if (!kind.truncationKeepsNext) {  // a provider's known loss (ContractTransport)
      std::fprintf(stderr, "[%s] the message after a truncated one is not awaited\n",
                   kind.name.c_str());
      t.cancel(r2);
    } else {
      if (failure.empty()) failure = waitAll(t, {&r2});
      if (failure.empty()) failure = checkPattern(next, next.size(), 1, 0, 1);
    }
  }
  storeBarrier(r.store, "end", 2);
  return failure;
}

TEST_P(TransportContract, RecvTooSmallIsAnErrorNotACrash) {
  const ContractTransport& k = kind();
  EXPECT_EQ(run(2, [&k](ContractRank& r) { return truncationRank(r, k); }), "");
}

std::string goneRank(ContractRank& r, const ContractTransport& kind) {
  Transport& t = *r.t;
  const int rank = r.rank;
  std::string failure;
  if (kind.describesProcess &&
      (t.peers()[rank].pid != ::getpid() || t.peers()[rank].host != hostName())) {
    return "peers() does not describe this process";
  }
  // One message each way first, so that a connection exists (tcp) before the peer goes.
  unsigned char out = 7, in = 0;
  Op s = makeOp(OpKind::kSend, 1 - rank, kTag, &out, 1);
  Op rv = makeOp(OpKind::kRecv, 1 - rank, kTag, &in, 1);
  t.post(s);
  t.post(rv);
  failure = waitAll(t, {&s, &rv});
  storeBarrier(r.store, "warm", 2);
  if (rank == 1) {
    if (failure.empty()) r.leave();  // a process: exits without closing anything
    return failure;
  }
  std::vector<unsigned char> big(256 * 1024, 1), sink(16);
  Op bigSend = makeOp(OpKind::kSend, 1, kTag + 1, big.data(), big.size());
  Op recv = makeOp(OpKind::kRecv, 1, kTag + 2, sink.data(), sink.size());
  t.post(recv);
  t.post(bigSend);
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (t.deadPeer() < 0 && Clock::now() < deadline) t.progress();
  std::fprintf(stderr, "[%s] deadPeer %d; send: %s; recv: %s\n", kind.name.c_str(), t.deadPeer(),
               bigSend.failed() ? bigSend.error.c_str() : (bigSend.done() ? "done" : "pending"),
               recv.failed() ? recv.error.c_str() : (recv.done() ? "done" : "pending"));
  if (t.deadPeer() != 1) failure = "deadPeer() is " + std::to_string(t.deadPeer()) + ", not 1";
  if (failure.empty() && !t.peerGone(1)) failure = "deadPeer() is 1 but peerGone(1) is false";
  if (failure.empty() && t.peerGone(0)) failure = "peerGone(0): this rank reported gone";
  if (recv.done()) failure = "a recv from a dead peer completed";
  t.cancel(recv);
  t.cancel(bigSend);
  return failure;
}

TEST_P(TransportContract, DeadPeerIsReported) {
  const ContractTransport& k = kind();
  EXPECT_EQ(run(2, [&k](ContractRank& r) { return goneRank(r, k); }), "");
}

}  // namespace
}  // namespace smddp::test
