// SPDX-License-Identifier: Apache-2.0
// Provider facts (libfabric 1.17, checked with fi_info and the mp tests; see docs in the report):
//  - shm: mem_tag_format 0xaaaaaaaaaaaaaaaa (64 usable bits), inject_size 4096, tx/rx size 1024,
//    mr_mode FI_MR_VIRT_ADDR (RMA only: tagged host buffers need no registration), addresses are
//    strings "fi_shm://<name>" (we name each endpoint uniquely: see bindAddress). More than 1024
//    posted receives: fi_trecv fails with -FI_ENOMEM (not EAGAIN); posted receives and unexpected
//    messages share that pool, and when it is empty shm stops reading its queue (deadlock).
//    Truncation comes as err = -FI_ETRUNC (negative!) with len = olen = 0; truncating a message >
//    4096 B (CMA/SAR protocol) hangs inside fi_cq_read. It never reports a dead peer: sends to it
//    are copied into its shared-memory queue and complete; receives from it just stay pending (the
//    liveness probe in peer_liveness.h covers shm). With FI_SOURCE, a message from an endpoint
//    outside our address vector gets no source written (smr_peer_cq_write skips it for
//    FI_ADDR_NOTAVAIL; 1.18 writes it): fi_cq_readfrom returns the CQ slot's previous value
//    (measured: a stranger's message reported as fi_addr 0, rank 0's). And such a message matches
//    every receive, those that name a peer too (smr_match_id: FI_ADDR_UNSPEC on either side
//    matches; 1.19's util_srx matches it to receives from any peer only): only the remote CQ
//    data it claims (foreign_senders.h) tells it apart.
//  - tcp;ofi_rxm: mem_tag_format 0xaaaaaaaaaaaaaaaa, inject_size 64, tx/rx size 2048, mr_mode
//    none. Measured: after a peer with an open connection exits, a 256 KiB send to it and a recv
//    from it both stay pending for 10 s+ with no CQ error, so the liveness probe is what notices
//    on one host; errors that do come (reset / refused) are classified by meansPeerGone. The
//    endpoint binds the address given as node with FI_SOURCE, so tests stay on 127.0.0.1.
//    Truncating an eager (< 16 KiB) message loses the peer's next message; rendezvous-sized
//    ones truncate cleanly (olen is set).
//  - net (RDM over TCP without ofi_rxm): 63 tag bits, inject_size 128, tx/rx size 256; binds the
//    address given as node with FI_SOURCE like tcp; the transport contract suite (dead peers, any
//    source, foreign senders) passes on it as on tcp;ofi_rxm, except that truncating a message
//    (1000 or 100000 B) loses the sender's next one.
//  - efa: registers host memory itself, so we do not offer FI_MR_LOCAL; an unreachable peer is
//    reported as FI_EIO with a provider error string. (Not testable here: no EFA device.)
#include "transport/ofi/provider_profile.h"
#include "transport/ofi/shm_regions.h"

#include <rdma/fi_errno.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "smddp/error.h"
#include "transport/ofi/libfabric_api.h"

namespace smddp::transport::ofi {
namespace {

constexpr uint64_t kHostMrMode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;

}  // namespace

bool providerPresent(const std::string& name) {
  InfoPtr hints(libfabric().allocinfo());
  if (!hints) return false;
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_TAGGED;
  hints->fabric_attr->prov_name = strdup(name.c_str());
  fi_info* found = nullptr;
  int rc = libfabric().getinfo(FI_VERSION(1, 17), nullptr, nullptr, 0, hints.get(), &found);
  InfoPtr owned(found);
  return rc == 0 && found != nullptr;
}

ProviderProfile profileFor(const std::string& name) {
  ProviderProfile p;
  p.mrMode = kHostMrMode;
  if (name == "tcp" || name == "tcp;ofi_rxm") {
    p.name = "tcp;ofi_rxm";
    p.bindsIp = true;
    p.sourceAddress = true;
    p.peerDeathVisible = true;
    p.closeLinger = std::chrono::milliseconds(20);
  } else if (name == "net") {  // libfabric's RDM over TCP without ofi_rxm (1.17+)
    p.name = "net";
    p.bindsIp = true;
    p.sourceAddress = true;
    p.peerDeathVisible = true;
    p.closeLinger = std::chrono::milliseconds(20);
  } else if (name == "shm") {
    p.name = "shm";
    p.hostMemoryOnly = true;
    p.sourceAddress = true;
    p.sourceSince = FI_VERSION(118, 0);  // providers' versions: 100 * major + minor
  } else if (name == "efa") {
    p.name = "efa";
    p.peerDeathVisible = true;
    p.takesDeviceMemory = true;
  } else {
    p.name = name;  // generic: FI_PROVIDER=sockets, udp;ofi_rxd, ...
  }
  return p;
}

namespace {

// providerPresent, asked once per process: the installed libfabric does not change meanwhile.
bool efaInstalled() {
  static const bool present = providerPresent("efa");
  return present;
}
bool netInstalled() {
  static const bool present = providerPresent("net");
  return present;
}

}  // namespace

std::string chooseProvider(const Config& config, const std::string& providerOverride,
                           bool sameHost) {
  std::string wanted = !providerOverride.empty() ? providerOverride : config.provider;
  if (wanted.empty() || wanted == "auto") {
    if (!config.fiProvider.empty()) {
      wanted = config.fiProvider;
    } else if (efaInstalled()) {
      wanted = "efa";
    } else if (sameHost) {
      wanted = "shm";
    } else {
      wanted = netInstalled() ? "net" : "tcp";
    }
  }
  return profileFor(wanted).name;
}

InfoPtr makeHints(const ProviderProfile& profile, bool hmem) {
  InfoPtr hints(libfabric().allocinfo());
  if (!hints) throw Error(ErrorCode::kTransport, "fi_allocinfo failed (out of memory)");
  hints->caps = FI_TAGGED | FI_DIRECTED_RECV;  // receives name their source peer
  hints->mode = FI_CONTEXT | FI_CONTEXT2;      // each Op lends its fi_context2
  hints->domain_attr->cq_data_size = 4;        // every message carries its sender's rank
  // ... which is checked against the address it comes from (foreign_senders.h).
  if (profile.sourceAddress) hints->caps |= FI_SOURCE;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;  // one thread drives a transport
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->domain_attr->mr_mode = static_cast<int>(profile.mrMode);
  if (hmem && profile.takesDeviceMemory) {
    hints->caps |= FI_HMEM;
    hints->domain_attr->mr_mode |= FI_MR_HMEM;
  }
  hints->fabric_attr->prov_name = strdup(profile.name.c_str());
  return hints;
}

void cudaRegistration(const void* base, size_t bytes, int ordinal, iovec* iov, fi_mr_attr* attr) {
  *iov = iovec{const_cast<void*>(base), bytes};
  *attr = fi_mr_attr{};
  attr->mr_iov = iov;
  attr->iov_count = 1;
  attr->access = FI_SEND | FI_RECV;
  attr->iface = FI_HMEM_CUDA;
  attr->device.cuda = ordinal;
}

std::string bindAddress(const ProviderProfile& profile, const Config& config, bool sameHost) {
  if (profile.name == "shm") {
    // shm names its shared-memory region after the endpoint's source name, by default the pid.
    // A rank killed with SIGKILL leaves its region in /dev/shm, and a later process given the
    // same pid then fails fi_enable with EBUSY: name every endpoint uniquely instead, in a form
    // that lets later processes remove what dead ones left (shm_regions.h).
    return shmEndpointName();
  }
  if (!profile.bindsIp) return "";
  if (!config.fabricAddr.empty()) return config.fabricAddr;
  // Every rank on this host: loopback keeps the traffic off the network (and tests on 127.0.0.1).
  return sameHost ? "127.0.0.1" : "";
}

bool sourceTrusted(const ProviderProfile& profile, const fi_info& info) {
  if (!profile.sourceAddress || (info.caps & FI_SOURCE) == 0) return false;
  const uint32_t version = info.fabric_attr != nullptr ? info.fabric_attr->prov_version : 0;
  return version >= profile.sourceSince;
}

int usableTagBits(const fi_info& info) {
  uint64_t format = info.ep_attr != nullptr ? info.ep_attr->mem_tag_format : 0;
  if (format == 0) return 64;  // no restriction advertised
  // Providers mark usable bits up to the highest set bit (0xaaaa... = all 64, as in
  // aws-ofi-nccl's reading of mem_tag_format); the bits above it are theirs.
  return 64 - __builtin_clzll(format);
}

bool postWouldBlock(const ProviderProfile& profile, int err) {
  if (err == FI_EAGAIN) return true;
  // shm 1.17 answers fi_trecv with -FI_ENOMEM once its rx_attr->size (1024) receive entries are
  // all posted, instead of -FI_EAGAIN; they free up as receives complete.
  return err == FI_ENOMEM && profile.name == "shm";
}

bool meansPeerGone(const ProviderProfile& profile, int err) {
  switch (err) {
    case FI_ECONNRESET:
    case FI_ECONNREFUSED:
    case FI_ECONNABORTED:
    case FI_ENOTCONN:
    case FI_EHOSTUNREACH:
    case FI_ENETUNREACH:
    case EPIPE:
      return true;
    case FI_EIO:
      return profile.name == "efa";  // efa: "unreachable remote" comes as EIO
    default:
      return false;
  }
}

}  // namespace smddp::transport::ofi
