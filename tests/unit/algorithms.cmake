# SPDX-License-Identifier: Apache-2.0
# Unit tier of the algorithms layer: pattern math (no transport), selector and SMDDP_ALGO parsing,
# the pending-check queue, the arena's chunk sizes.
smddp_add_test(algorithms_patterns_test unit 60
  LIBS smddp_algorithms
  SOURCES unit/algorithms_patterns_test.cc)
smddp_add_test(algorithms_selector_test unit 60
  LIBS smddp_algorithms
  SOURCES unit/algorithms_selector_test.cc)
smddp_add_test(algorithms_pending_test unit 60
  LIBS smddp_algorithms
  SOURCES unit/algorithms_pending_test.cc)
smddp_add_test(algorithms_chunks_test unit 60
  LIBS smddp_algorithms
  SOURCES unit/algorithms_chunks_test.cc)
