# SPDX-License-Identifier: Apache-2.0
# reduce_bench: throughput of the CPU reduction kernels per ISA next to memcpy (Google Benchmark).
# Built only when Google Benchmark is installed; include from bench/CMakeLists.txt.
find_package(benchmark QUIET)
if(benchmark_FOUND AND TARGET smddp_reduce)
  add_executable(reduce_bench ${CMAKE_CURRENT_LIST_DIR}/reduce_bench.cc)
  target_link_libraries(reduce_bench PRIVATE smddp_reduce benchmark::benchmark smddp_warnings)
else()
  message(STATUS "reduce_bench: Google Benchmark not found, not building it")
endif()
