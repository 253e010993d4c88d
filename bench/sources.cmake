# SPDX-License-Identifier: Apache-2.0
# smddp_bench_common: the driver every *_perf binary shares (flags, launcher, timing loop, checks,
# table/JSON output) plus one small file per collective describing it. Each binary is perf_main.cc
# compiled with SMDDP_BENCH_COLLECTIVE naming its collective's spec.
add_library(smddp_bench_common STATIC
  options.cc
  element.cc
  verify.cc
  report.cc
  launcher.cc
  runner.cc
  driver.cc
  all_reduce.cc
  broadcast.cc
  all_gather.cc
  barrier.cc
  reduce_scatter.cc
  all_to_all.cc
  sendrecv.cc
  rooted.cc)
# bench/ is a quote-only include directory: it holds the `compare` script, which a plain -I would
# let shadow the standard <compare> header.
target_include_directories(smddp_bench_common
  PUBLIC ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src)
target_compile_options(smddp_bench_common PUBLIC "SHELL:-iquote ${CMAKE_CURRENT_SOURCE_DIR}")
target_link_libraries(smddp_bench_common PUBLIC smddp smddp_common PRIVATE smddp_warnings)
if(TARGET smddp_store)
  target_link_libraries(smddp_bench_common PUBLIC smddp_store)
endif()

# The binaries need the whole engine; without the core only the library (and its unit tests) build.
if(TARGET smddp_core)
  foreach(pair all_reduce:allReduceSpec broadcast:broadcastSpec all_gather:allGatherSpec
               barrier:barrierSpec reduce_scatter:reduceScatterSpec alltoall:allToAllSpec
               sendrecv:sendRecvSpec reduce:reduceSpec gather:gatherSpec scatter:scatterSpec)
    string(REPLACE ":" ";" parts ${pair})
    list(GET parts 0 coll)
    list(GET parts 1 spec)
    add_executable(${coll}_perf perf_main.cc)
    target_compile_definitions(${coll}_perf PRIVATE SMDDP_BENCH_COLLECTIVE=${spec})
    target_link_libraries(${coll}_perf PRIVATE smddp_bench_common smddp_warnings)
  endforeach()
endif()
