// SPDX-License-Identifier: Apache-2.0
// Which libfabric provider a communicator opens (provider_profile.h): an explicit name wins,
// FI_PROVIDER next; auto picks shm on one host and, across hosts, net (RDM over TCP without
// ofi_rxm) where this libfabric offers it, tcp;ofi_rxm otherwise; efa where present. Source
// addresses (FI_SOURCE) are asked of tcp, net and shm, and trusted of shm from 1.18 on only.
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
  EXPECT_FALSE(net.takesDeviceMemory);
  EXPECT_FALSE(net.hostMemoryOnly);
}

// What fi_getinfo would return: the caps granted and the provider's version (117.0 = 1.17.0).
bool trusted(const std::string& provider, uint64_t caps, uint32_t version) {
  fi_fabric_attr fabric{};
  fabric.prov_version = version;
  fi_info info{};
  info.caps = caps;
  info.fabric_attr = &fabric;
  return sourceTrusted(profileFor(provider), info);
}

TEST(Provider, SourceAddressesAreTrustedWhereTheyAreWrittenForEveryMessage) {
  const uint64_t caps = FI_TAGGED | FI_SOURCE;
  EXPECT_TRUE(trusted("tcp", caps, FI_VERSION(117, 0)));
  EXPECT_TRUE(trusted("net", caps, FI_VERSION(117, 0)));
  EXPECT_FALSE(trusted("shm", caps, FI_VERSION(117, 0)));   // strangers' sources left stale
  EXPECT_FALSE(trusted("shm", caps, FI_VERSION(117, 10)));  // 1.17.1: the same
  EXPECT_TRUE(trusted("shm", caps, FI_VERSION(118, 0)));
  EXPECT_FALSE(trusted("efa", caps, FI_VERSION(117, 0)));       // not run here: range check only
  EXPECT_FALSE(trusted("sockets", caps, FI_VERSION(117, 0)));   // the generic profile
  EXPECT_FALSE(trusted("tcp", FI_TAGGED, FI_VERSION(117, 0)));  // not granted
  EXPECT_TRUE(profileFor("shm").sourceAddress) << "asked for, then judged by version";
}

}  // namespace
}  // namespace smddp::transport::ofi
