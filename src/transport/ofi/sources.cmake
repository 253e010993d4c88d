# SPDX-License-Identifier: Apache-2.0
# The libfabric transport: the only place in smddp that includes <rdma/...> headers.
target_sources(smddp_transport PRIVATE
  transport/ofi/bootstrap.cc
  transport/ofi/bootstrap_entries.cc
  transport/ofi/endpoint.cc
  transport/ofi/fatal_signals.cc
  transport/ofi/foreign_senders.cc
  transport/ofi/libfabric_api.cc
  transport/ofi/ofi_transport.cc
  transport/ofi/peer_addresses.cc
  transport/ofi/provider_profile.cc
  transport/ofi/shm_regions.cc)
