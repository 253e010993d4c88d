# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_mp_failure mp 400 LIBS smddp_core SOURCES mp/failure_test.cc)
  smddp_add_test(smddp_mp_failure_leak mp 300 LIBS smddp_core SOURCES mp/failure_leak_test.cc)
  smddp_add_test(smddp_mp_failure_collectives mp 300 LIBS smddp_core
                 SOURCES mp/failure_collectives_test.cc)
endif()
# A crash stays a crash once libfabric (and the PSM libraries it links) is loaded.
if(TARGET smddp_core)
  add_library(smddp_fake_provider MODULE mp/fake_provider_lib.cc)
  smddp_add_test(smddp_mp_fatal_signal mp 120 LIBS smddp_core smddp_transport
                 SOURCES mp/fatal_signal_test.cc)
  add_dependencies(smddp_mp_fatal_signal smddp_fake_provider)
  target_compile_definitions(smddp_mp_fatal_signal PRIVATE
                             SMDDP_FAKE_PROVIDER="$<TARGET_FILE:smddp_fake_provider>")
endif()
if(TARGET smddp_core)
  smddp_add_test(smddp_mp_forged_store mp 200 LIBS smddp_core SOURCES mp/forged_store_test.cc)
endif()
if(TARGET smddp_core)
  smddp_add_test(smddp_mp_straggler mp 400 LIBS smddp_core SOURCES mp/straggler_test.cc)
endif()
