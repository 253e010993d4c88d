# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_unit_core unit 120 LIBS smddp_core
                 SOURCES unit/core_recycling_test.cc unit/core_engine_test.cc)
endif()
