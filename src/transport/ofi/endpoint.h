// SPDX-License-Identifier: Apache-2.0
// Endpoint: the libfabric objects behind one transport, opened for one provider profile.
// Invariant: members are declared in opening order, so destruction closes the endpoint first, then
// CQ and AV, then domain, then fabric (see fid.h); an Endpoint that exists is enabled and bound.
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <memory>
#include <string>

#include "smddp/error.h"
#include "transport/ofi/fid.h"
#include "transport/ofi/provider_profile.h"

namespace smddp::transport::ofi {

struct Endpoint {
  InfoPtr info;
  FidPtr<fid_fabric> fabric;
  FidPtr<fid_domain> domain;
  FidPtr<fid_av> av;
  FidPtr<fid_cq> cq;
  FidPtr<fid_ep> ep;
  bool hmem = false;  // opened with FI_HMEM (FI_MR_HMEM): CUDA buffers go to the provider

  // This endpoint's address as fi_getname reports it (opaque bytes for the peers' fi_av_insert).
  std::string address() const;
};

// fi_getinfo + open + bind + enable. bindAddr: IP to bind (tcp) or "". Throws Error(kTransport)
// naming rank, provider and the failing call with fi_strerror, or when the provider leaves fewer
// than tag::kTagBitsUsed tag bits.
// wantHmem: first ask for FI_HMEM when the profile can do GPUDirect; without it, as before.
std::unique_ptr<Endpoint> openEndpoint(const ProviderProfile& profile, const std::string& bindAddr,
                                       int rank, int size, bool wantHmem = false);

// "rank 3: <call> failed for provider shm: <fi_strerror(-rc)>", as an Error(kTransport).
[[noreturn]] void throwFi(int rank, const std::string& provider, const std::string& call, int rc);

}  // namespace smddp::transport::ofi
