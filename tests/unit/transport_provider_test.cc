// SPDX-License-Identifier: Apache-2.0
// Which libfabric provider a communicator opens (provider_profile.h): an explicit name wins,
// FI_PROVIDER next; auto picks shm on one host and, across hosts, net (RDM over TCP without
// ofi_rxm) where this libfabric offers it, tcp;ofi_rxm otherwise; efa where present.
#include <gtest/gtest.h>

#include "common/config.h"
#include "transport/ofi/provider_profile.h"

namespace smddp::transport::ofi {
namespace {

TEST(Provider, ExplicitNamesWin) {
  const Config c = Config::fromMap({{"FI_PROVIDER", "sockets"}});
  EXPECT_EQ(chooseProvider(c, "tcp", false), "tcp;ofi_rxm");
  EXPECT_EQ(chooseProvider(c, "net", false), "net");
  EXPECT_EQ(chooseProvider(c, "shm", true), "shm");
  EXPECT_EQ(chooseProvider(c, "", false), "sockets");
  EXPECT_EQ(chooseProvider(Config::fromMap({{"SMDDP_PROVIDER", "net"}}), "", true), "net");
}

TEST(Provider, AutoPicksShmOnOneHostAndTheBestTcpAcrossHosts) {
  if (providerPresent("efa")) GTEST_SKIP() << "efa present: auto picks it";
  const Config c = Config::fromMap({});
  EXPECT_EQ(chooseProvider(c, "", true), "shm");
  EXPECT_EQ(chooseProvider(c, "auto", false), providerPresent("net") ? "net" : "tcp;ofi_rxm");
}

TEST(Provider, NetBindsItsAddressAndReportsDeadPeers) {
  const ProviderProfile net = profileFor("net");
  EXPECT_EQ(net.name, "net");
  EXPECT_TRUE(net.bindsIp);
  EXPECT_TRUE(net.peerDeathVisible);
  EXPECT_FALSE(net.deviceDirect);
  EXPECT_FALSE(net.hostMemoryOnly);
}

}  // namespace
}  // namespace smddp::transport::ofi
