// SPDX-License-Identifier: Apache-2.0
// The transport contract, messages from outside the group, over every transport that senders
// outside the group can reach (Capabilities::dropsForeignSenders: libfabric's shm, tcp;ofi_rxm
// and net on 127.0.0.1; the loopback fabric has no outside and skips). A group of two ranks
// and a third process that is no member: another job on the host, with its own endpoints. It
// reads the victim's address from the shared store (as anything on the host that can read the
// store can) and sends with the victim's tags while claiming, in the remote CQ data every message
// carries, to be rank 9999 and then rank 0, the victim's real peer. Point-to-point tags are the
// caller's tag unchanged (PointToPoint::post), so `recv(src=any, tag=7)` waits on transport tag 7:
// trivial to match. The victim's any-source receive must never report a sender outside the group
// nor take a stranger's bytes as rank 0's; it must still get rank 0's real message afterwards,
// and count the strangers' messages it dropped. A receive naming rank 0 is never matched by the
// stranger at all (the provider matches it by the sender's address). The claim of rank 0 is sent
// only where the transport checks the provider's source address (not shm before libfabric 1.18:
// see provider_profile.h): elsewhere a claim within the group cannot be told from the truth.
#include <gtest/gtest.h>

#include <algorithm>

#include "common/config.h"
#include "mp/transport_contract.h"
#include "transport/loopback/loopback_transport.h"
#include "transport/ofi/endpoint.h"
#include "transport/ofi/ofi_transport.h"
#include "transport/ofi/peer_addresses.h"
#include "transport/ofi/provider_profile.h"

namespace smddp::test {
namespace {

constexpr uint64_t kAnyTag = 7;     // the victim's recv(src=any, tag=7)
constexpr uint64_t kDirectTag = 8;  // the victim's recv(src=0, tag=8)
constexpr size_t kBytes = 64;
constexpr int kVictim = 1;

// Out of range, then the victim's real peer where the victim can tell (store key "posted").
std::vector<int> claims(bool sourceChecked) {
  return sourceChecked ? std::vector<int>{9999, 0} : std::vector<int>{9999};
}

// A transport of no group: its own endpoint, the victim's published address, and a rank it
// claims (the remote CQ data of what it sends). Peer index 1 is the victim.
std::unique_ptr<Transport> openStranger(Store& store, const std::string& provider, int claim) {
  using namespace transport::ofi;
  ProviderProfile profile = profileFor(provider);
  const Config config = Config::fromMap({});
  auto ep = openEndpoint(profile, bindAddress(profile, config, true), claim, 2);
  const std::string value = store.get("tp/addr/" + std::to_string(kVictim), kWaitLimit);
  const std::string addr = value.substr(value.find('\0') + 1);
  const fi_addr_t victim = insertPeerAddress(*ep, profile.name, addr, claim, kVictim);
  return std::make_unique<OfiTransport>(std::move(ep), std::move(profile), claim, 2,
                                        std::vector<transport::PeerInfo>(2),
                                        std::vector<fi_addr_t>{victim, victim});
}

std::string strangerRank(Store& store, const std::string& provider) {
  const std::vector<int> kClaims = claims(store.get("posted", kWaitLimit) == "1");
  std::vector<std::unique_ptr<Transport>> strangers;
  std::vector<unsigned char> junk(kBytes, 0xBA);
  std::vector<Op> sends;
  sends.reserve(2 * kClaims.size());
  for (int claim : kClaims) {
    strangers.push_back(openStranger(store, provider, claim));
    sends.push_back(makeOp(OpKind::kSend, kVictim, kAnyTag, junk.data(), junk.size()));
    sends.push_back(makeOp(OpKind::kSend, kVictim, kDirectTag, junk.data(), junk.size()));
  }
  std::string failure;
  for (size_t i = 0; i < strangers.size() && failure.empty(); ++i) {
    strangers[i]->post(sends[2 * i]);
    strangers[i]->post(sends[2 * i + 1]);
    failure = waitAll(*strangers[i], {&sends[2 * i], &sends[2 * i + 1]});
  }
  store.add("attacked", 1);
  // Keep the endpoints (and their shm regions) until the victim is done with their messages.
  auto deadline = Clock::now() + kWaitLimit;
  while (store.add("victim-done", 0) == 0 && Clock::now() < deadline) {
    for (auto& s : strangers) s->progress();
    std::this_thread::yield();
  }
  return failure;
}

std::string memberRank(Transport* t, Store& store) {
  store.get("drops-seen", kWaitLimit);
  std::vector<unsigned char> a(kBytes), b(kBytes);
  fillPattern(a, 0, kVictim, 0);
  fillPattern(b, 0, kVictim, 1);
  Op s1 = makeOp(OpKind::kSend, kVictim, kAnyTag, a.data(), a.size());
  Op s2 = makeOp(OpKind::kSend, kVictim, kDirectTag, b.data(), b.size());
  t->post(s1);
  t->post(s2);
  std::string failure = waitAll(*t, {&s1, &s2});
  store.get("victim-done", kWaitLimit);
  return failure;
}

std::string victimChecks(Transport& t, Store& store) {
  std::vector<unsigned char> any(kBytes, 0xEE), direct(kBytes, 0xEE);
  Op anyRecv = makeOp(OpKind::kRecv, transport::kAnyPeer, kAnyTag, any.data(), any.size());
  Op directRecv = makeOp(OpKind::kRecv, 0, kDirectTag, direct.data(), direct.size());
  t.post(anyRecv);
  t.post(directRecv);
  const bool sourceChecked = dynamic_cast<transport::ofi::OfiTransport&>(t).checksSourceAddress();
  std::fprintf(stderr, "[%s] any-source receives check the source address: %s\n", t.name().c_str(),
               sourceChecked ? "yes" : "no (the claimed rank's range only)");
  store.set("posted", sourceChecked ? "1" : "0");
  // Each claim sends one message per tag. Those to the any-source receive are dropped; those to
  // the receive from rank 0 stay with the provider, or (shm before 1.19) are matched and dropped.
  const uint64_t least = claims(sourceChecked).size(), most = 2 * least;
  auto early = [](const Op& op) {
    return std::string(op.peer == transport::kAnyPeer ? "the any-source" : "the directed") +
           " receive finished before the group's member sent anything: " +
           (op.failed() ? op.error : "source " + std::to_string(op.source));
  };
  // Until the stranger's sends completed and at least its any-source messages were dropped, then
  // a little longer for the rest: all of them come before rank 0's real messages.
  auto deadline = Clock::now() + kWaitLimit;
  auto drained = Clock::time_point::max();
  while (Clock::now() < std::min(deadline, drained)) {
    t.progress();
    if (anyRecv.finished()) return early(anyRecv);
    if (directRecv.finished()) return early(directRecv);
    if (drained == Clock::time_point::max() && t.foreignMessagesDropped() >= least &&
        store.add("attacked", 0) > 0) {
      drained = Clock::now() + std::chrono::milliseconds(200);
    }
    std::this_thread::yield();
  }
  auto countWrong = [&] {
    const uint64_t n = t.foreignMessagesDropped();
    if (n >= least && n <= most) return std::string();
    return "dropped " + std::to_string(n) + " messages from outside the group, expected " +
           std::to_string(least) + ".." + std::to_string(most);
  };
  if (!countWrong().empty()) return countWrong();
  const uint64_t dropped = t.foreignMessagesDropped();
  store.set("drops-seen", "");
  std::string failure = waitAll(t, {&anyRecv, &directRecv});
  if (!failure.empty()) return failure;
  if (anyRecv.source != 0 || directRecv.source != 0) {
    return "sources " + std::to_string(anyRecv.source) + " / " + std::to_string(directRecv.source) +
           ", expected rank 0";
  }
  if (anyRecv.received != kBytes) return "received " + std::to_string(anyRecv.received) + " bytes";
  failure = checkPattern(any, kBytes, 0, kVictim, 0);
  if (failure.empty()) failure = checkPattern(direct, kBytes, 0, kVictim, 1);
  if (failure.empty() && t.foreignMessagesDropped() != dropped) {
    failure = "the drop count moved from " + std::to_string(dropped) + " to " +
              std::to_string(t.foreignMessagesDropped());
  }
  if (!failure.empty()) return failure;
  // A message to itself still comes from a member (its own address, its own rank).
  unsigned char out = 42, in = 0;
  Op self = makeOp(OpKind::kRecv, transport::kAnyPeer, kAnyTag + 2, &in, 1);
  Op send = makeOp(OpKind::kSend, kVictim, kAnyTag + 2, &out, 1);
  t.post(self);
  t.post(send);
  failure = waitAll(t, {&self, &send});
  if (failure.empty() && (self.source != kVictim || in != 42)) {
    failure = "a message to itself came from rank " + std::to_string(self.source);
  }
  return failure;
}

std::string victimRank(Transport& t, Store& store) {
  std::string failure = t.capabilities().dropsForeignSenders
                            ? victimChecks(t, store)
                            : "a libfabric transport says no sender outside the group reaches it";
  store.set("drops-seen", "");  // never leave rank 0 waiting on a failed check
  store.add("victim-done", 1);
  return failure;
}

TEST_P(TransportContract, AnySourceReceiveDeliversOnlyTheGroupsMessages) {
  const ContractTransport& k = kind();
  if (!k.foreignSenders) {
    // Only a transport that says so may skip: the loopback fabric has no outside.
    auto fabric = transport::LoopbackFabric::create(1);
    ASSERT_FALSE(fabric->endpoint(0)->capabilities().dropsForeignSenders);
    GTEST_SKIP() << k.name << ": no sender outside the group can reach this transport";
  }
  EXPECT_EQ(run(3,
                [&k](ContractRank& r) {
                  if (r.rank == 2) return strangerRank(r.store, k.provider);
                  return r.rank == 0 ? memberRank(r.t, r.store) : victimRank(*r.t, r.store);
                },
                2),
            "");
}

}  // namespace
}  // namespace smddp::test
