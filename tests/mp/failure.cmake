if(TARGET smddp_core)
  smddp_add_test(smddp_mp_failure mp 400 LIBS smddp_core SOURCES mp/failure_test.cc)
  smddp_add_test(smddp_mp_failure_leak mp 300 LIBS smddp_core SOURCES mp/failure_leak_test.cc)
endif()
