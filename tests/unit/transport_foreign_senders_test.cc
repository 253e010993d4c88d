// SPDX-License-Identifier: Apache-2.0
// Who sent a received message (foreign_senders.h): the claimed rank (remote CQ data) must lie in
// the group, be the named peer of a receive that names one, and come from that rank's address
// where source addresses are trusted; a drop is counted every time and logged at a bounded rate.
#include <gtest/gtest.h>

#include "transport/ofi/foreign_senders.h"
#include "transport/transport.h"

namespace smddp::transport::ofi {
namespace {

const std::vector<fi_addr_t> kAddrs = {10, 11, 12};  // fi_addr_t of ranks 0..2
constexpr uint64_t kData = FI_REMOTE_CQ_DATA | FI_TAGGED | FI_RECV;

TEST(ForeignSenders, AnySourceTakesTheClaimedRankOnlyWithinTheGroup) {
  EXPECT_EQ(senderOf(kAnyPeer, kData, 2, false, FI_ADDR_NOTAVAIL, kAddrs), 2);
  EXPECT_EQ(senderOf(kAnyPeer, kData, 3, false, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(kAnyPeer, kData, 9999, false, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(kAnyPeer, kData, ~uint64_t{0}, false, FI_ADDR_NOTAVAIL, kAddrs),
            kForeignSender);
  EXPECT_EQ(senderOf(kAnyPeer, FI_TAGGED | FI_RECV, 1, false, FI_ADDR_NOTAVAIL, kAddrs),
            kForeignSender)
      << "every member's message carries its rank";
}

TEST(ForeignSenders, TrustedSourcesMustBeTheClaimedRanks) {
  EXPECT_EQ(senderOf(kAnyPeer, kData, 1, true, 11, kAddrs), 1);
  EXPECT_EQ(senderOf(kAnyPeer, kData, 1, true, 10, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(kAnyPeer, kData, 1, true, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(kAnyPeer, kData, 1, false, FI_ADDR_NOTAVAIL, kAddrs), 1)
      << "untrusted sources are not read";
}

TEST(ForeignSenders, ANamedPeerMustBeTheClaimedRank) {
  EXPECT_EQ(senderOf(0, kData, 0, false, FI_ADDR_NOTAVAIL, kAddrs), 0);
  EXPECT_EQ(senderOf(0, kData, 1, false, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(0, kData, 9999, false, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
  EXPECT_EQ(senderOf(2, kData, 2, true, 12, kAddrs), 2);
  EXPECT_EQ(senderOf(2, kData, 2, true, FI_ADDR_NOTAVAIL, kAddrs), kForeignSender);
}

TEST(ForeignSenders, ReasonsNameTheClaim) {
  EXPECT_EQ(whyForeign(kAnyPeer, kData, 9999, 3), "claims rank 9999, outside 0..2");
  EXPECT_EQ(whyForeign(0, kData, 1, 3), "claims rank 1 to a receive from rank 0");
  EXPECT_EQ(whyForeign(kAnyPeer, kData, 1, 3),
            "claims rank 1 but comes from another address than that rank's");
  EXPECT_EQ(whyForeign(kAnyPeer, FI_RECV, 0, 3), "carries no sender rank");
}

TEST(ForeignSenders, EveryDropIsCounted) {
  ForeignDrops drops(0);
  EXPECT_EQ(drops.count(), 0u);
  for (int i = 0; i < 1000; ++i) drops.note("test");  // logs one line, not 1000
  EXPECT_EQ(drops.count(), 1000u);
}

}  // namespace
}  // namespace smddp::transport::ofi
