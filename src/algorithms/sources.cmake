# SPDX-License-Identifier: Apache-2.0
# The algorithms layer: the Exec runtime, pure pattern math (patterns/, header-only), one file per
# message algorithm, the arena wing (arena/: its shared segment, protocol steps and collectives),
# the registry and the selector. It sees transports only through transport/transport.h.
smddp_layer(smddp_algorithms
  algorithms/collective.cc
  algorithms/exec.cc
  algorithms/tag_room.cc
  algorithms/reduce_scatter_ring.cc
  algorithms/all_reduce_recursive_doubling.cc
  algorithms/all_reduce_ring.cc
  algorithms/hierarchical_host_steps.cc
  algorithms/hierarchical_in_place.cc
  algorithms/hierarchical_all_reduce.cc
  algorithms/hierarchical_all_gather.cc
  algorithms/hierarchical_reduce_scatter.cc
  algorithms/hierarchical_broadcast.cc
  algorithms/hierarchical_barrier.cc
  algorithms/hierarchical_reduce.cc
  algorithms/hierarchical_gather_scatter.cc
  algorithms/hierarchical_all_to_all.cc
  algorithms/broadcast_binomial.cc
  algorithms/broadcast_chain.cc
  algorithms/reduce_binomial.cc
  algorithms/gather_scatter_linear.cc
  algorithms/all_to_all_pairwise.cc
  algorithms/fixed_order.cc
  algorithms/all_gather_bruck.cc
  algorithms/all_gather_ring.cc
  algorithms/barrier_dissemination.cc
  algorithms/arena/arena.cc
  algorithms/arena/segment.cc
  algorithms/arena/mailbox.cc
  algorithms/arena/all_reduce.cc
  algorithms/arena/collectives.cc
  algorithms/arena/eager_ring.cc
  algorithms/arena/reduce_scatter.cc
  algorithms/arena/reduce.cc
  algorithms/arena/gather_scatter.cc
  algorithms/arena/all_to_all.cc
  algorithms/arena/pool.cc
  algorithms/arena/in_place.cc
  algorithms/arena/pooled.cc
  algorithms/registry.cc
  algorithms/tables.cc
  algorithms/scoped.cc
  algorithms/selector.cc)
target_link_libraries(smddp_algorithms PUBLIC smddp_transport smddp_store smddp_reduce smddp_common)
