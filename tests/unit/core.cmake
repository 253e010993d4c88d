if(TARGET smddp_core)
  smddp_add_test(smddp_unit_core unit 60 LIBS smddp_core SOURCES unit/core_recycling_test.cc)
endif()
