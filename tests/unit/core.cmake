# SPDX-License-Identifier: Apache-2.0
if(TARGET smddp_core)
  smddp_add_test(smddp_unit_core unit 120 LIBS smddp_core
                 SOURCES unit/core_recycling_test.cc unit/core_engine_test.cc
                         unit/core_staged_layout_test.cc unit/core_device_path_test.cc
                         unit/core_device_ipc_plan_test.cc unit/core_device_ipc_hosts_test.cc
                         unit/core_device_watchdog_test.cc)
endif()
