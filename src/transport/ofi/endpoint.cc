// SPDX-License-Identifier: Apache-2.0
// Opening the libfabric objects of one transport (see endpoint.h). Order matters: fabric ->
// domain -> {CQ, AV} -> endpoint bound to both -> enable; fid.h closes them in reverse.
#include "transport/ofi/endpoint.h"

#include <rdma/fi_errno.h>

#include <cstdio>
#include <vector>

#include "common/tag.h"
#include "transport/ofi/libfabric_api.h"

namespace smddp::transport::ofi {

void throwFi(int rank, const std::string& provider, const std::string& call, int rc) {
  throw Error(ErrorCode::kTransport, "rank " + std::to_string(rank) + ": " + call +
                                         " failed for provider " + provider + ": " +
                                         libfabric().strerror(rc < 0 ? -rc : rc) + " (" +
                                         std::to_string(rc) + ")");
}

std::string Endpoint::address() const {
  std::vector<char> buf(64);
  size_t len = buf.size();
  int rc = fi_getname(&ep->fid, buf.data(), &len);
  if (rc == -FI_ETOOSMALL) {
    buf.resize(len);
    rc = fi_getname(&ep->fid, buf.data(), &len);
  }
  if (rc != 0) throwFi(-1, info->fabric_attr->prov_name, "fi_getname", rc);
  return std::string(buf.data(), len);
}

namespace {

InfoPtr getInfo(const ProviderProfile& profile, const std::string& bindAddr, int rank,
                bool hmem) {
  InfoPtr hints = makeHints(profile, hmem);
  fi_info* found = nullptr;
  const char* node = bindAddr.empty() ? nullptr : bindAddr.c_str();
  uint64_t flags = bindAddr.empty() ? 0 : FI_SOURCE;  // node is our own address, not a peer's
  int rc = libfabric().getinfo(FI_VERSION(1, 17), node, nullptr, flags, hints.get(), &found);
  InfoPtr info(found);
  if (rc == -FI_ENODATA || (rc == 0 && !info)) {
    throw Error(ErrorCode::kTransport,
                errorHead(rank) + ": libfabric provider '" + profile.name + "' not found" +
                    (bindAddr.empty() ? std::string() : " on address " + bindAddr) +
                    ": no such provider offers RDM endpoints with tagged messages here (fi_info -l "
                    "lists the installed providers; set SMDDP_PROVIDER=shm|tcp|efa|auto)");
  }
  if (rc != 0) {
    throwFi(rank, profile.name,
            "fi_getinfo(RDM, tagged, directed recv" +
                (bindAddr.empty() ? std::string() : ", bind " + bindAddr) + ")",
            rc != 0 ? rc : -FI_ENODATA);
  }
  int bits = usableTagBits(*info);
  if (bits < tag::kTagBitsUsed) {
    char format[32];
    std::snprintf(format, sizeof(format), "0x%llx",
                  static_cast<unsigned long long>(info->ep_attr->mem_tag_format));
    throw Error(ErrorCode::kTransport,
                "rank " + std::to_string(rank) + ": provider " + profile.name + " offers " +
                    std::to_string(bits) + " tag bits (mem_tag_format " + format +
                    "), smddp needs " + std::to_string(tag::kTagBitsUsed));
  }
  // fi_getinfo may list several matches (one per NIC); the first is the provider's preference.
  InfoPtr first(libfabric().dupinfo(info.get()));
  if (first && first->next) {
    libfabric().freeinfo(first->next);
    first->next = nullptr;
  }
  return first;
}

}  // namespace

std::unique_ptr<Endpoint> openEndpoint(const ProviderProfile& profile, const std::string& bindAddr,
                                       int rank, int size, bool wantHmem) {
  auto e = std::make_unique<Endpoint>();
  if (wantHmem && profile.takesDeviceMemory) {
    try {
      e->info = getInfo(profile, bindAddr, rank, true);
      e->hmem = (e->info->caps & FI_HMEM) != 0;
    } catch (const Error&) {  // no FI_HMEM here: the endpoint every build opens
    }
  }
  if (!e->info) e->info = getInfo(profile, bindAddr, rank, false);
  const std::string& prov = profile.name;
  fid_fabric* fabric = nullptr;
  int rc = libfabric().fabric(e->info->fabric_attr, &fabric, nullptr);
  e->fabric.reset(fabric);
  if (rc != 0) throwFi(rank, prov, "fi_fabric", rc);
  fid_domain* domain = nullptr;
  rc = fi_domain(e->fabric.get(), e->info.get(), &domain, nullptr);
  e->domain.reset(domain);
  if (rc != 0) throwFi(rank, prov, "fi_domain", rc);

  fi_cq_attr cqAttr{};
  cqAttr.format = FI_CQ_FORMAT_TAGGED;
  cqAttr.wait_obj = FI_WAIT_NONE;  // we poll; no wait object to signal
  cqAttr.size = e->info->rx_attr->size + e->info->tx_attr->size;
  fid_cq* cq = nullptr;
  rc = fi_cq_open(e->domain.get(), &cqAttr, &cq, nullptr);
  e->cq.reset(cq);
  if (rc != 0) throwFi(rank, prov, "fi_cq_open", rc);

  fi_av_attr avAttr{};
  avAttr.type = FI_AV_TABLE;
  avAttr.count = static_cast<size_t>(size);
  fid_av* av = nullptr;
  rc = fi_av_open(e->domain.get(), &avAttr, &av, nullptr);
  e->av.reset(av);
  if (rc != 0) throwFi(rank, prov, "fi_av_open", rc);

  fid_ep* ep = nullptr;
  rc = fi_endpoint(e->domain.get(), e->info.get(), &ep, nullptr);
  e->ep.reset(ep);
  if (rc != 0) throwFi(rank, prov, "fi_endpoint", rc);
  rc = fi_ep_bind(e->ep.get(), &e->cq->fid, FI_TRANSMIT | FI_RECV);
  if (rc != 0) throwFi(rank, prov, "fi_ep_bind(cq)", rc);
  rc = fi_ep_bind(e->ep.get(), &e->av->fid, 0);
  if (rc != 0) throwFi(rank, prov, "fi_ep_bind(av)", rc);
  rc = fi_enable(e->ep.get());
  if (rc != 0) throwFi(rank, prov, "fi_enable", rc);
  return e;
}

}  // namespace smddp::transport::ofi
