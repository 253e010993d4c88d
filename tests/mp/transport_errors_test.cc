// SPDX-License-Identifier: Apache-2.0
// Multi-process error paths of the libfabric transport (shm, tcp;ofi_rxm and net on 127.0.0.1):
// a cancelled receive does not consume the message meant for a later one, a receive too small for
// its message fails with an error naming both sizes (and the transport goes on working), a peer
// that exits is reported by deadPeer(), and a bad provider name is a clear error.
#include <gtest/gtest.h>
#include <unistd.h>

#include "common/logging.h"
#include "mp/fork_ranks.h"
#include "mp/transport_helpers.h"
#include "smddp/error.h"

namespace smddp::test {
namespace {

using TransportErrors = TempDirTest<std::string>;

constexpr uint64_t kTag = 0x0abc000000000042ull;

int cancelRank(const std::string& dir, const std::string& provider, int rank) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, 2, provider);
  std::string failure;
  std::vector<unsigned char> msg(5000);
  if (rank == 1) {
    store->get("cancelled", kWaitLimit);  // sent only after rank 0 withdrew its first receive
    fillPattern(msg, 1, 0, 0);
    Op send = makeOp(OpKind::kSend, 0, kTag, msg.data(), msg.size());
    t->post(send);
    failure = waitAll(*t, {&send});
  } else {
    std::vector<unsigned char> first(5000, 0xEE), second(5000, 0xEE);
    Op withdrawn = makeOp(OpKind::kRecv, 1, kTag, first.data(), first.size());
    t->post(withdrawn);
    t->progress();
    if (!t->cancel(withdrawn)) failure = "cancel of a pending recv returned false";
    if (withdrawn.state == transport::OpState::kPending) failure = "op still pending after cancel";
    if (withdrawn.done()) failure = "a recv nobody sent to completed";
    store->set("cancelled", "");
    Op recv = makeOp(OpKind::kRecv, 1, kTag, second.data(), second.size());
    t->post(recv);
    if (failure.empty()) failure = waitAll(*t, {&recv});
    if (failure.empty()) failure = checkPattern(second, second.size(), 1, 0, 0);
    for (size_t j = 0; j < first.size() && failure.empty(); ++j) {
      if (first[j] != 0xEE) failure = "cancelled recv buffer written at byte " + std::to_string(j);
    }
  }
  storeBarrier(*store, "end", 2);
  return report(rank, failure);
}

TEST_P(TransportErrors, CancelledRecvLeavesMessageForTheNext) {
  std::string dir = dir_, provider = GetParam();
  EXPECT_EQ(forkRanks(2, kRankLimit, [&](int r) { return cancelRank(dir, provider, r); }), "");
}

// libfabric 1.17 quirks (see the report / provider_profile.cc): shm hangs inside fi_cq_read when
// a message sent by its CMA/SAR protocol (> 4096 B) is truncated, so shm uses an inline-sized
// message; tcp;ofi_rxm loses the next message of the peer after truncating an eager (< 16 KiB)
// one, so tcp uses a rendezvous-sized message. Both still prove: error, sizes named, no crash.
size_t truncBytes(const std::string& provider) { return provider == "shm" ? 1000 : 100000; }

int truncationRank(const std::string& dir, const std::string& provider, int rank) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, 2, provider);
  std::string failure;
  if (rank == 1) {
    std::vector<unsigned char> big(truncBytes(provider)), small(10);
    fillPattern(big, 1, 0, 0);
    fillPattern(small, 1, 0, 1);
    Op a = makeOp(OpKind::kSend, 0, kTag, big.data(), big.size());
    Op b = makeOp(OpKind::kSend, 0, kTag + 1, small.data(), small.size());
    t->post(a);
    t->post(b);
    // The sender of a truncated message may see success or an error; it must finish either way.
    auto deadline = Clock::now() + kWaitLimit;
    while (!(a.finished() && b.finished()) && Clock::now() < deadline) t->progress();
    if (!a.finished() || !b.done()) failure = "sends unfinished: " + a.error + " / " + b.error;
    if (a.failed()) std::fprintf(stderr, "[%s] sender of truncated message: %s\n",
                                 provider.c_str(), a.error.c_str());
  } else {
    std::vector<unsigned char> tooSmall(100, 0xEE), next(10, 0xEE);
    Op r1 = makeOp(OpKind::kRecv, 1, kTag, tooSmall.data(), tooSmall.size());
    Op r2 = makeOp(OpKind::kRecv, 1, kTag + 1, next.data(), next.size());
    t->post(r1);
    t->post(r2);
    std::string wait = waitAll(*t, {&r1});
    std::fprintf(stderr, "[%s] truncated recv: %s\n", provider.c_str(), r1.error.c_str());
    if (!r1.failed()) failure = "a 1000-byte message into a 100-byte recv did not fail";
    else if (r1.error.find("truncated") == std::string::npos ||
             r1.error.find("buffer of 100 bytes") == std::string::npos ||
             r1.error.find("from rank 1") == std::string::npos) {
      failure = "truncation error does not name the sizes: " + r1.error;
    }
    if (failure.empty()) failure = waitAll(*t, {&r2});
    if (failure.empty()) failure = checkPattern(next, next.size(), 1, 0, 1);
  }
  storeBarrier(*store, "end", 2);
  return report(rank, failure);
}

TEST_P(TransportErrors, RecvTooSmallIsAnErrorNotACrash) {
  std::string dir = dir_, provider = GetParam();
  EXPECT_EQ(forkRanks(2, kRankLimit, [&](int r) { return truncationRank(dir, provider, r); }), "");
}

int deathRank(const std::string& dir, const std::string& provider, int rank) {
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, rank, 2, provider);
  std::string failure;
  if (t->peers()[rank].pid != ::getpid() || t->peers()[rank].host != hostName()) {
    return report(rank, "peers() does not describe this process");
  }
  // One message each way first, so that a connection exists (tcp) before the peer dies.
  unsigned char out = 7, in = 0;
  Op s = makeOp(OpKind::kSend, 1 - rank, kTag, &out, 1);
  Op r = makeOp(OpKind::kRecv, 1 - rank, kTag, &in, 1);
  t->post(s);
  t->post(r);
  failure = waitAll(*t, {&s, &r});
  storeBarrier(*store, "warm", 2);
  if (rank == 1) ::_exit(failure.empty() ? 0 : 1);  // dies without closing anything
  std::vector<unsigned char> big(256 * 1024, 1), sink(16);
  Op bigSend = makeOp(OpKind::kSend, 1, kTag + 1, big.data(), big.size());
  Op recv = makeOp(OpKind::kRecv, 1, kTag + 2, sink.data(), sink.size());
  t->post(recv);
  t->post(bigSend);
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (t->deadPeer() < 0 && Clock::now() < deadline) t->progress();
  std::fprintf(stderr, "[%s] deadPeer %d; send: %s; recv: %s\n", provider.c_str(), t->deadPeer(),
               bigSend.failed() ? bigSend.error.c_str() : (bigSend.done() ? "done" : "pending"),
               recv.failed() ? recv.error.c_str() : (recv.done() ? "done" : "pending"));
  if (t->deadPeer() != 1) failure = "deadPeer() is " + std::to_string(t->deadPeer()) + ", not 1";
  if (recv.done()) failure = "a recv from a dead peer completed";
  t->cancel(recv);
  t->cancel(bigSend);
  return report(rank, failure);
}

TEST_P(TransportErrors, DeadPeerIsReported) {
  std::string dir = dir_, provider = GetParam();
  EXPECT_EQ(forkRanks(2, kRankLimit, [&](int r) { return deathRank(dir, provider, r); }), "");
}

INSTANTIATE_TEST_SUITE_P(Providers, TransportErrors, ::testing::Values("shm", "tcp", "net"),
                         [](const auto& info) { return info.param; });

TEST(TransportBootstrap, UnknownProviderIsAClearError) {
  std::string dir = makeTempDir("smddp-tp");
  auto store = makeFileStore(dir);
  try {
    openTransport(*store, 0, 1, "no-such-provider");
    FAIL() << "a transport opened on a provider that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTransport);
    EXPECT_NE(std::string(e.what()).find("no-such-provider"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("rank 0"), std::string::npos) << e.what();
  }
  removeTree(dir);
}

TEST(TransportBootstrap, SingleRankTalksToItself) {
  std::string dir = makeTempDir("smddp-tp");
  auto store = makeFileStore(dir);
  auto t = openTransport(*store, 0, 1, "shm");
  EXPECT_EQ(t->name(), "shm");
  std::vector<unsigned char> out(300), in(300, 0xEE);
  fillPattern(out, 0, 0, 5);
  Op r = makeOp(OpKind::kRecv, 0, kTag, in.data(), in.size());
  Op s = makeOp(OpKind::kSend, 0, kTag, out.data(), out.size());
  t->post(r);
  t->post(s);
  EXPECT_EQ(waitAll(*t, {&r, &s}), "");
  EXPECT_EQ(checkPattern(in, in.size(), 0, 0, 5), "");
  removeTree(dir);
}

}  // namespace
}  // namespace smddp::test
