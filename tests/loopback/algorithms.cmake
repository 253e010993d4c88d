# Loopback tier of the algorithms layer: every algorithm run directly (no core) with one thread per
# rank over the in-process transport. Sharded so each executable stays well under a minute.
set(_smddp_algo_harness loopback/algorithms_harness.cc)
smddp_add_test(algorithms_all_reduce_rd_test loopback 300
  LIBS smddp_algorithms
  SOURCES loopback/algorithms_all_reduce_rd_test.cc ${_smddp_algo_harness})
smddp_add_test(algorithms_all_reduce_ring_test loopback 300
  LIBS smddp_algorithms
  SOURCES loopback/algorithms_all_reduce_ring_test.cc ${_smddp_algo_harness})
smddp_add_test(algorithms_broadcast_test loopback 300
  LIBS smddp_algorithms
  SOURCES loopback/algorithms_broadcast_test.cc ${_smddp_algo_harness})
smddp_add_test(algorithms_all_gather_test loopback 300
  LIBS smddp_algorithms
  SOURCES loopback/algorithms_all_gather_test.cc ${_smddp_algo_harness})
smddp_add_test(algorithms_sequence_test loopback 300
  LIBS smddp_algorithms
  SOURCES loopback/algorithms_sequence_test.cc ${_smddp_algo_harness})
