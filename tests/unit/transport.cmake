# SPDX-License-Identifier: Apache-2.0
# Unit tier of the transport layer: libfabric FI_HMEM planning and registration, provider choice,
# bootstrap entries and peer addresses read as untrusted text, senders outside the group, which
# peers' pids are watched.
smddp_add_test(transport_hmem_test unit 60
  LIBS smddp_transport Libfabric::headers
  SOURCES unit/transport_hmem_test.cc)
smddp_add_test(transport_provider_test unit 60
  LIBS smddp_transport Libfabric::headers
  SOURCES unit/transport_provider_test.cc)
smddp_add_test(transport_shm_regions_test unit 60
  LIBS smddp_transport
  SOURCES unit/transport_shm_regions_test.cc)
smddp_add_test(transport_bootstrap_entries_test unit 60
  LIBS smddp_transport Libfabric::headers
  SOURCES unit/transport_bootstrap_entries_test.cc)
smddp_add_test(transport_foreign_senders_test unit 60
  LIBS smddp_transport Libfabric::headers
  SOURCES unit/transport_foreign_senders_test.cc)
smddp_add_test(transport_peer_liveness_test unit 60
  LIBS smddp_transport
  SOURCES unit/transport_peer_liveness_test.cc)
