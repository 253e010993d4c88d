# SPDX-License-Identifier: Apache-2.0
# End-to-end runs of the perf tools over real libfabric (forked ranks, -np): every element of every
# dtype x op is checked, and the tool's exit status fails the test on any #wrong or failed rank.
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
endif()
