# SPDX-License-Identifier: Apache-2.0
# Rendezvous stores (file, TCP, prefix) that communicators bootstrap through. Depends on common only.
smddp_layer(smddp_store
  store/file_io.cc
  store/file_store.cc
  store/prefix_store.cc
  store/signed_store.cc
  store/store_codec.cc
  store/store_handshake.cc
  store/store_dir.cc
  store/store_wire.cc
  store/tcp_store.cc
  store/tcp_store_limits.cc
  store/tcp_store_server.cc
  store/tcp_store_serve.cc)
target_link_libraries(smddp_store PUBLIC smddp_common)
