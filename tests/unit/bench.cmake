# SPDX-License-Identifier: Apache-2.0
# Unit tests of the perf tools' pure parts: flags and sweep, verifier and patterns, table/JSON,
# the -np launcher (with dummy children) and the per-collective descriptions.
smddp_add_test(bench_unit_test unit 120
  LIBS smddp_bench_common
  SOURCES
    unit/bench_options_test.cc
    unit/bench_verify_test.cc
    unit/bench_report_test.cc
    unit/bench_launcher_test.cc
    unit/bench_collectives_test.cc)

# The binaries reject a bad flag with a message naming it (no rank is started).
if(SMDDP_BUILD_BENCH AND TARGET smddp_core)
  add_test(NAME bench_perf_bad_flag COMMAND all_reduce_perf -b 8 --bogus 1)
  set_tests_properties(bench_perf_bad_flag PROPERTIES LABELS unit TIMEOUT 30
    PASS_REGULAR_EXPRESSION "all_reduce_perf: unknown flag '--bogus'")
endif()
