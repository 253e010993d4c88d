# SPDX-License-Identifier: Apache-2.0
# The shared-memory arena's segment: its creation over the store (ranks as threads of one process, each mapping
# the POSIX object), sizes and the collective agreement on falling back.
smddp_add_test(arena_segment_test mp 60 LIBS smddp_algorithms smddp_store
               SOURCES mp/arena_segment_test.cc)
