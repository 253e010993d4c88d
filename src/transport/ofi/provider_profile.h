// SPDX-License-Identifier: Apache-2.0
// Everything that differs between the libfabric providers smddp runs on (efa, shm, tcp;ofi_rxm),
// and the choice among them. The rest of ofi/ is provider-agnostic: it asks this file for hints,
// for the tag-bit check and for what an error code means.
// Invariant: no other file in smddp tests a provider's name.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "common/config.h"
#include "transport/ofi/fid.h"

namespace smddp::transport::ofi {

struct ProviderProfile {
  std::string name;               // libfabric's prov_name, e.g. "tcp;ofi_rxm"
  uint64_t mrMode = 0;            // mr_mode bits we accept in the hints
  bool bindsIp = false;           // the endpoint binds an IP address (tcp): pass node + FI_SOURCE
  bool peerDeathVisible = false;  // the provider reports a dead peer as a CQ error on our ops
  bool hostMemoryOnly = false;    // every peer is reached through this host's memory (shm)
  // How long closing the endpoint first keeps polling it (TCP-based providers): a message whose
  // send completed may still sit in the provider's queue, and closing a socket with unread input
  // resets the connection, which can drop what the peer has not read yet. Without it, a rank
  // that exited right after its last collective made a slower peer fail that collective, its
  // last message lost (the mp p2p suite on net: ~1 run in 25 with two suites at once).
  std::chrono::milliseconds closeLinger{0};
  // The provider can move CUDA memory itself (GPUDirect RDMA) when it offers FI_HMEM: efa.
  // shm and tcp report FI_HMEM too (for host memory, or CUDA through copies when built with it):
  // staging is as good there, and it is the tested path.
  bool takesDeviceMemory = false;
  // Ask for FI_SOURCE: completions report the sender's address (fi_cq_readfrom), so that a
  // receive from any rank can tell the group's messages from outsiders' (foreign_senders.h).
  // tcp;ofi_rxm and net write every receive's source (FI_ADDR_NOTAVAIL for a sender outside our
  // address vector), read at completion from the peer table that fi_av_insert fills. shm before
  // libfabric 1.18 writes no source for a sender outside it, so fi_cq_readfrom returns whatever
  // that CQ slot held before (another sender's address): trusted from sourceSince on only. efa
  // reports sources too, but could not be run here: off, like the generic profile; there only the
  // claimed rank's range is checked.
  bool sourceAddress = false;
  uint32_t sourceSince = 0;  // the provider version (fabric_attr->prov_version) trusted from
};

// The profile for a provider name ("tcp" is accepted for "tcp;ofi_rxm"; "net" is libfabric's RDM
// over TCP without ofi_rxm, 1.17 and later). Unknown names get a
// conservative generic profile so that FI_PROVIDER=sockets and the like still work.
ProviderProfile profileFor(const std::string& name);

// True when libfabric offers an RDM endpoint of provider `name` (fi_getinfo, tagged).
bool providerPresent(const std::string& name);

// SMDDP_PROVIDER / FI_PROVIDER / topology -> a libfabric provider name. providerOverride wins
// when non-empty; auto: FI_PROVIDER when set, else efa when present, else shm when every rank
// runs on this host (sameHost), else net (RDM over TCP without ofi_rxm: fewer copies and no
// rendezvous round trip below 16 KiB) when present, else tcp;ofi_rxm.
std::string chooseProvider(const Config& config, const std::string& providerOverride,
                           bool sameHost);

// Hints for fi_getinfo: RDM, tagged with directed receive, 4 bytes of remote CQ data (the
// sender's rank), FI_AV_TABLE, FI_THREAD_DOMAIN, per-message fi_context2, the profile's
// mr_mode, and FI_SOURCE where the profile has sourceAddress.
// hmem (only for a takesDeviceMemory profile): also FI_HMEM, and FI_MR_HMEM (CUDA buffers are
// registered and every op on one carries its desc).
InfoPtr makeHints(const ProviderProfile& profile, bool hmem = false);

// What a CUDA buffer's registration asks of the provider: the CUDA interface of device
// `ordinal`, for sends and receives. Filled into `attr` (its iov points at `iov`).
void cudaRegistration(const void* base, size_t bytes, int ordinal, iovec* iov, fi_mr_attr* attr);

// shm: a unique endpoint name. tcp: the IP address it binds to ("" = libfabric's choice), per
// SMDDP_FABRIC_ADDR and the topology.
std::string bindAddress(const ProviderProfile& profile, const Config& config, bool sameHost);

// True when the receives of an endpoint opened with `info` report their source address
// reliably: the profile asked for FI_SOURCE, the provider granted it, and its version is trusted.
bool sourceTrusted(const ProviderProfile& profile, const fi_info& info);

// Tag bits the provider leaves to us (from ep_attr->mem_tag_format).
int usableTagBits(const fi_info& info);

// True when a post's error code only means "out of queue slots now, retry after reading the CQ".
bool postWouldBlock(const ProviderProfile& profile, int err);

// True when a CQ error code means the peer of the op is gone (process died, connection lost).
bool meansPeerGone(const ProviderProfile& profile, int err);

}  // namespace smddp::transport::ofi
