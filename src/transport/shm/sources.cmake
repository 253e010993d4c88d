# SPDX-License-Identifier: Apache-2.0
# The intra-host shared-memory arena (POSIX shm, no libfabric): memory for the arena collectives.
target_sources(smddp_transport PRIVATE transport/shm/arena.cc)
