# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_loopback_failure loopback 120 LIBS smddp_core SOURCES loopback/failure_test.cc)
endif()
