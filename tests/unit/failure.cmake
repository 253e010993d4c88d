# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_unit_failure unit 60 LIBS smddp_core SOURCES unit/failure_recorder_test.cc)
  smddp_add_test(watch_liveness_test unit 60 LIBS smddp_watch SOURCES unit/watch_liveness_test.cc)
endif()
if(TARGET smddp_watch)
  smddp_add_test(watch_straggler_test unit 60 LIBS smddp_watch SOURCES unit/watch_straggler_test.cc)
endif()
