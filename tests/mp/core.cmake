# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_mp_collectives mp 300 LIBS smddp_core SOURCES mp/core_collectives_test.cc)
  smddp_add_test(smddp_mp_p2p mp 300 LIBS smddp_core SOURCES mp/p2p_test.cc)
  smddp_add_test(smddp_mp_subgroups mp 300 LIBS smddp_core SOURCES mp/subgroups_test.cc)
endif()
