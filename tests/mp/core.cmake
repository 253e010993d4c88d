# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_mp_collectives mp 300 LIBS smddp_core SOURCES mp/core_collectives_test.cc)
  smddp_add_test(smddp_mp_p2p mp 300 LIBS smddp_core SOURCES mp/p2p_test.cc)
  smddp_add_test(smddp_mp_subgroups mp 300 LIBS smddp_core SOURCES mp/subgroups_test.cc)
  smddp_add_test(smddp_mp_generations mp 600 LIBS smddp_core SOURCES mp/generations_test.cc)
  # Device memory on the fake device (random stream delays, 64 KiB staging segments): through
  # CUDA IPC within the host, and staged through host memory (Options::deviceIpc false).
  smddp_add_test(smddp_mp_device mp 300 LIBS smddp_core SOURCES mp/core_device_test.cc)
  set_tests_properties(smddp_mp_device PROPERTIES ENVIRONMENT
    "SMDDP_DEVICE=fake;SMDDP_FAKE_DEVICE_DELAY_US=30;SMDDP_STAGING_BYTES=64K")
endif()
# The NCCL plane on the fake device, with smddp's test NCCL (tests/nccl/nccl.cmake) loaded
# through SMDDP_NCCL_LIBRARY; the minimal and too-old builds for the plane choice.
if(TARGET smddp_core AND SMDDP_HAVE_NCCL_PLANE)
  smddp_add_test(smddp_mp_nccl_plane mp 600 LIBS smddp_core SOURCES mp/nccl_plane_test.cc
                 mp/nccl_plane_faults_test.cc)
  add_dependencies(smddp_mp_nccl_plane smddp_test_nccl smddp_test_nccl_minimal smddp_test_nccl_old)
  target_compile_definitions(smddp_mp_nccl_plane PRIVATE
    SMDDP_TEST_NCCL_MINIMAL_PATH="$<TARGET_FILE:smddp_test_nccl_minimal>"
    SMDDP_TEST_NCCL_OLD_PATH="$<TARGET_FILE:smddp_test_nccl_old>")
  set_tests_properties(smddp_mp_nccl_plane PROPERTIES ENVIRONMENT
    "SMDDP_DEVICE=fake;SMDDP_FAKE_DEVICE_DELAY_US=30;SMDDP_NCCL_LIBRARY=$<TARGET_FILE:smddp_test_nccl>")
endif()
