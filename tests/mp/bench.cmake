# SPDX-License-Identifier: Apache-2.0
# End-to-end runs of the perf tools over real libfabric (forked ranks, -np): every element of every
# dtype x op is checked, and the tool's exit status fails the test on any #wrong or failed rank;
# also on device buffers (-g 1) of the fake device.
if(SMDDP_BUILD_BENCH AND TARGET smddp_core)
  function(smddp_bench_case name)
    add_test(NAME bench_${name} COMMAND ${ARGN} -T 60000 -L 150)
    set_tests_properties(bench_${name} PROPERTIES LABELS mp TIMEOUT 180)
  endfunction()
  foreach(provider shm tcp)
    smddp_bench_case(all_reduce_${provider}
      all_reduce_perf -np 3 -P ${provider} -b 0 -e 64K -f 8 -n 2 -w 1 -d all -o all)
    smddp_bench_case(broadcast_${provider}
      broadcast_perf -np 3 -P ${provider} -b 0 -e 64K -f 8 -n 2 -w 1 -d all -r -1)
    smddp_bench_case(all_gather_${provider}
      all_gather_perf -np 3 -P ${provider} -b 0 -e 64K -f 8 -n 2 -w 1 -d all)
    smddp_bench_case(barrier_${provider} barrier_perf -np 4 -P ${provider} -n 5 -w 1)
  endforeach()
  # -g 1 on the fake device (random stream delays): every collective on the NCCL plane (smddp's
  # test NCCL, tests/nccl) and all_reduce on smddp's own plane; the header names the plane.
  if(SMDDP_HAVE_NCCL_PLANE)
    set(_fake "SMDDP_DEVICE=fake;SMDDP_FAKE_DEVICE_DELAY_US=20")
    foreach(tool all_reduce broadcast all_gather reduce_scatter alltoall reduce sendrecv)
      set(_flags -d all)
      if(tool STREQUAL "all_reduce" OR tool STREQUAL "reduce" OR tool STREQUAL "reduce_scatter")
        list(APPEND _flags -o all)
      endif()
      smddp_bench_case(${tool}_gpu_nccl ${tool}_perf -np 3 -g 1 -b 0 -e 64K -f 8 -n 2 -w 1 ${_flags})
      set_tests_properties(bench_${tool}_gpu_nccl PROPERTIES
        ENVIRONMENT "${_fake};SMDDP_NCCL_LIBRARY=$<TARGET_FILE:smddp_test_nccl>"
        FAIL_REGULAR_EXPRESSION ", smddp plane:")
    endforeach()
    smddp_bench_case(all_reduce_gpu_smddp
      all_reduce_perf -np 3 -g 1 -b 0 -e 256K -f 8 -n 2 -w 1 -d all -o all)
    set_tests_properties(bench_all_reduce_gpu_smddp PROPERTIES
      ENVIRONMENT "${_fake};SMDDP_GPU_PLANE=smddp;SMDDP_STAGING_BYTES=64K"
      FAIL_REGULAR_EXPRESSION ", nccl plane:")
  endif()
endif()
