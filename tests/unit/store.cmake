# SPDX-License-Identifier: Apache-2.0
# Unit tests of the rendezvous stores (file, TCP on 127.0.0.1 only, prefix).
smddp_add_test(store_file_test unit 60 LIBS smddp_store SOURCES unit/store_file_test.cc
               unit/store_file_safety_test.cc)
smddp_add_test(store_tcp_test unit 60 LIBS smddp_store SOURCES unit/store_tcp_test.cc)
smddp_add_test(store_prefix_test unit 30 LIBS smddp_store SOURCES unit/store_prefix_test.cc)
smddp_add_test(store_hostile_server_test unit 90 LIBS smddp_store SOURCES unit/store_hostile_server_test.cc)
smddp_add_test(store_hostile_client_test unit 60 LIBS smddp_store SOURCES unit/store_hostile_client_test.cc)
