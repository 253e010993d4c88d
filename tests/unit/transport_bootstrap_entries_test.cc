// SPDX-License-Identifier: Apache-2.0
// Bootstrap entries as untrusted text (bootstrap_entries.h, peer_addresses.h): what this process
// publishes parses back unchanged; every field at its bounds is taken and one past them refused;
// an address is taken only at its format's length and shape.
#include <gtest/gtest.h>
#include <netinet/in.h>

#include <cstring>

#include "smddp/error.h"
#include "transport/ofi/bootstrap_entries.h"
#include "transport/ofi/peer_addresses.h"

namespace smddp::transport::ofi {
namespace {

bool parses(const std::string& entry) {
  try {
    parseHostEntry(entry, 0, 1);
    return true;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kStore);
    EXPECT_NE(std::string(e.what()).find("rank 0: bootstrap: the host entry of rank 1"),
              std::string::npos)
        << e.what();
    return false;
  }
}

TEST(BootstrapEntries, WhatThisProcessPublishesParsesBack) {
  PeerInfo self;
  self.host = "node-17.cluster.example";
  self.pid = 4194304;
  self.pidNamespace = "76db360e-e586-4d71-aa3a-8399477aca84/4:4026531836";
  self.cpus = "0-3,8,10-11/4";
  const PeerInfo back = parseHostEntry(formatHostEntry(self), 0, 1);
  EXPECT_EQ(back.host, self.host);
  EXPECT_EQ(back.pid, self.pid);
  EXPECT_EQ(back.pidNamespace, self.pidNamespace);
  EXPECT_EQ(back.cpus, self.cpus);
  self.pidNamespace = "";  // unknown: published as such (never watched)
  EXPECT_EQ(parseHostEntry(formatHostEntry(self), 0, 1).pidNamespace, "");
  self.cpus = "0-1/4294967295";  // a cgroup quota beyond the CPUs listed
  EXPECT_EQ(parseHostEntry(formatHostEntry(self), 0, 1).cpus, self.cpus);
  for (const char* cpus : {"", "0-99999", "garbage"}) {  // unknown or unusable: published as ""
    self.cpus = cpus;
    EXPECT_EQ(parseHostEntry(formatHostEntry(self), 0, 1).cpus, "") << cpus;
  }
}

TEST(BootstrapEntries, EveryFieldIsBounded) {
  EXPECT_TRUE(parses("h\n1\n\n"));
  EXPECT_TRUE(parses(std::string(kMaxHostName, 'h') + "\n1\n\n"));
  EXPECT_FALSE(parses(std::string(kMaxHostName + 1, 'h') + "\n1\n\n"));
  EXPECT_FALSE(parses("\n1\n\n"));
  EXPECT_FALSE(parses("h\x7f\n1\n\n"));
  EXPECT_FALSE(parses("h\tx\n1\n\n"));
  EXPECT_TRUE(parses("h\n" + std::to_string(kMaxPid) + "\n\n"));
  EXPECT_FALSE(parses("h\n" + std::to_string(kMaxPid + 1) + "\n\n"));
  for (const char* pid : {"0", "-1", "+1", " 1", "1 ", "0x10", "", "1e3", "123456789012"}) {
    EXPECT_FALSE(parses(std::string("h\n") + pid + "\n\n")) << pid;
  }
  EXPECT_TRUE(parses("h\n1\n" + std::string(kMaxPidNamespace, 'a') + "\n"));
  EXPECT_FALSE(parses("h\n1\n" + std::string(kMaxPidNamespace + 1, 'a') + "\n"));
  EXPECT_FALSE(parses("h\n1\nNS\n"));
  EXPECT_FALSE(parses("h\n1\nns with spaces\n"));
  EXPECT_TRUE(parses("h\n1\n\n0-65535"));
  EXPECT_FALSE(parses("h\n1\n\n0-65535,0"));  // 65537 CPUs listed
  EXPECT_FALSE(parses("h\n1\n\n65536"));
  EXPECT_FALSE(parses("h\n1\n\n3-2"));
  EXPECT_FALSE(parses("h\n1\n\n0,,1"));
  EXPECT_FALSE(parses("h\n1\n\n0-3/0"));
  EXPECT_FALSE(parses("h\n1\n\n0-3/"));
  EXPECT_FALSE(parses("h\n1\n\n0-3/4294967296"));
  EXPECT_FALSE(parses("h\n1\n\n" + std::string(kMaxCpusEntry + 1, '1')));
  EXPECT_FALSE(parses("h\n1\n\n0\n"));
  EXPECT_FALSE(parses("h\n1\n0"));  // the format without the pid namespace
  EXPECT_FALSE(parses(std::string("h\n1\n\n0") + '\0'));
}

TEST(BootstrapEntries, ExcerptsArePrintableAndShort) {
  EXPECT_EQ(excerpt(std::string("a\nb\0\\", 5)), "a\\x0ab\\x00\\x5c");
  EXPECT_EQ(excerpt(std::string(100, 'x'), 4), "xxxx... (100 bytes)");
}

std::string inet4() {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(1234);
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}

std::string inet6() {
  sockaddr_in6 a{};
  a.sin6_family = AF_INET6;
  return std::string(reinterpret_cast<const char*>(&a), sizeof(a));
}

TEST(PeerAddresses, SocketAddressesHaveTheirFamilysSize) {
  EXPECT_EQ(addressProblem(FI_SOCKADDR_IN, inet4(), inet4()), "");
  EXPECT_EQ(addressProblem(FI_SOCKADDR_IN, inet4(), inet4().substr(0, 5)),
            "5 bytes where the provider's addresses (sockaddr_in) are 16 bytes");
  EXPECT_NE(addressProblem(FI_SOCKADDR_IN, inet4(), inet4() + "x"), "");
  EXPECT_NE(addressProblem(FI_SOCKADDR_IN, inet4(), inet6()), "");
  std::string wrongFamily = inet4();
  wrongFamily[0] = wrongFamily[1] = 'A';
  EXPECT_NE(addressProblem(FI_SOCKADDR_IN, inet4(), wrongFamily).find("address family"),
            std::string::npos);
  EXPECT_EQ(addressProblem(FI_SOCKADDR_IN6, inet6(), inet6()), "");
  EXPECT_NE(addressProblem(FI_SOCKADDR_IN6, inet6(), inet4()), "");
  EXPECT_EQ(addressProblem(FI_SOCKADDR, inet4(), inet6()), "");
  EXPECT_EQ(addressProblem(FI_SOCKADDR, inet6(), inet4()), "");
  EXPECT_NE(addressProblem(FI_SOCKADDR, inet4(), ""), "");
}

TEST(PeerAddresses, StringAddressesAreShortPrintableAndTerminated) {
  const std::string own("fi_shm://smddp-1-2-3\0", 21);
  EXPECT_EQ(addressProblem(FI_ADDR_STR, own, std::string("fi_shm://other\0", 15)), "");
  EXPECT_NE(addressProblem(FI_ADDR_STR, own, "fi_shm://unterminated"), "");
  EXPECT_NE(addressProblem(FI_ADDR_STR, own, std::string("a\0b\0", 4)), "");
  EXPECT_NE(addressProblem(FI_ADDR_STR, own, std::string("\0", 1)), "");
  std::string longest(kMaxStringAddress, 'a');
  longest.back() = '\0';
  EXPECT_EQ(addressProblem(FI_ADDR_STR, own, longest), "");
  EXPECT_NE(addressProblem(FI_ADDR_STR, own, "a" + longest), "");
}

TEST(PeerAddresses, OpaqueAddressesHaveThisEndpointsLength) {
  const std::string own(32, '\x07');  // efa: 32 raw bytes
  EXPECT_EQ(addressProblem(FI_ADDR_EFA, own, std::string(32, '\0')), "");
  EXPECT_EQ(addressProblem(FI_ADDR_EFA, own, std::string(31, '\0')),
            "31 bytes where the provider's addresses are 32 bytes (this rank's)");
  EXPECT_NE(addressProblem(FI_FORMAT_UNSPEC, own, std::string(33, '\0')), "");
}

TEST(PeerAddresses, IpOfReadsOnlyWholeSocketAddresses) {
  EXPECT_EQ(ipOf(FI_SOCKADDR_IN, inet4()), "0.0.0.0");
  EXPECT_EQ(ipOf(FI_SOCKADDR_IN6, inet6()), "::");
  EXPECT_EQ(ipOf(FI_SOCKADDR_IN, inet4().substr(0, 8)), "");
  EXPECT_EQ(ipOf(FI_ADDR_STR, inet4()), "");
}

}  // namespace
}  // namespace smddp::transport::ofi
