// SPDX-License-Identifier: Apache-2.0
// libfabric FI_HMEM planning and registration (unvalidated on a real provider: Debian's
// libfabric has no CUDA support): only a GPUDirect-capable profile (efa) asks for FI_HMEM and
// FI_MR_HMEM; a CUDA registration names the CUDA interface, the device and send/recv access;
// endpoints of the providers here (shm, tcp) never open with FI_HMEM, whatever is asked, and
// their transports refuse CUDA registrations.
#include <gtest/gtest.h>

#include <vector>

#include "smddp/error.h"
#include "transport/ofi/endpoint.h"
#include "transport/ofi/provider_profile.h"

namespace smddp::transport::ofi {
namespace {

TEST(Hmem, OnlyAGpuDirectProfileAsksForIt) {
  const ProviderProfile efa = profileFor("efa");
  EXPECT_TRUE(efa.takesDeviceMemory);
  InfoPtr with = makeHints(efa, true);
  EXPECT_NE(with->caps & FI_HMEM, 0u);
  EXPECT_NE(with->domain_attr->mr_mode & FI_MR_HMEM, 0);
  InfoPtr without = makeHints(efa, false);
  EXPECT_EQ(without->caps & FI_HMEM, 0u);
  EXPECT_EQ(without->domain_attr->mr_mode & FI_MR_HMEM, 0);
  for (const char* name : {"shm", "tcp", "net", "sockets"}) {
    const ProviderProfile p = profileFor(name);
    EXPECT_FALSE(p.takesDeviceMemory) << name;
    InfoPtr hints = makeHints(p, true);
    EXPECT_EQ(hints->caps & FI_HMEM, 0u) << name;
    EXPECT_EQ(hints->domain_attr->mr_mode & FI_MR_HMEM, 0) << name;
    // Everything else is the host hints.
    InfoPtr host = makeHints(p, false);
    EXPECT_EQ(hints->caps, host->caps) << name;
    EXPECT_EQ(hints->domain_attr->mr_mode, host->domain_attr->mr_mode) << name;
  }
}

TEST(Hmem, CudaRegistrationNamesInterfaceDeviceAndAccess) {
  std::vector<char> buf(4096);
  iovec iov{};
  fi_mr_attr attr{};
  attr.requested_key = 99;  // overwritten: nothing of an earlier use survives
  cudaRegistration(buf.data() + 64, 1000, 3, &iov, &attr);
  EXPECT_EQ(iov.iov_base, buf.data() + 64);
  EXPECT_EQ(iov.iov_len, 1000u);
  EXPECT_EQ(attr.mr_iov, &iov);
  EXPECT_EQ(attr.iov_count, 1u);
  EXPECT_EQ(attr.access, static_cast<uint64_t>(FI_SEND | FI_RECV));
  EXPECT_EQ(attr.iface, FI_HMEM_CUDA);
  EXPECT_EQ(attr.device.cuda, 3);
  EXPECT_EQ(attr.requested_key, 0u);
}

TEST(Hmem, ProvidersHereNeverOpenWithIt) {
  for (const char* name : {"shm", "tcp", "net"}) {
    const ProviderProfile p = profileFor(name);
    const std::string bind = p.bindsIp ? "127.0.0.1" : "smddp-hmem-test";
    auto e = openEndpoint(p, bind, 0, 1, /*wantHmem=*/true);
    EXPECT_FALSE(e->hmem) << name;
  }
}

}  // namespace
}  // namespace smddp::transport::ofi
