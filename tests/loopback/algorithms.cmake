# SPDX-License-Identifier: Apache-2.0
# Loopback tier of the algorithms layer: every algorithm run directly (no core) with one thread per
# rank over the in-process transport. Sharded so each executable stays well under a minute.
foreach(shard all_reduce_rd all_reduce_ring all_reduce_fixed reduce_scatter reduce gather_scatter all_to_all
              broadcast all_gather
              sequence arena hierarchical hier_collectives hier_rooted uneven_hosts
              arena_eager)
  smddp_add_test(algorithms_${shard}_test loopback 300
    LIBS smddp_algorithms
    SOURCES loopback/algorithms_${shard}_test.cc loopback/algorithms_harness.cc)
endforeach()
